-- The herald-api processes alive now. Each one renews its row every second and divides every
-- app's rate limit by the number of rows renewed lately, so N processes behind a load balancer
-- allow an app its limit, not N times it.
CREATE TABLE api_replicas (
    id      uuid PRIMARY KEY,
    name    text NOT NULL,
    seen_at timestamptz NOT NULL DEFAULT now()
);
