-- herald-gateway's presence (docs/gateway.md, "Presence"): which device holds a live connection
-- to which gateway. Each gateway holds a lease row it renews every few seconds; a presence row
-- counts only while its gateway's lease does, so a gateway that dies stops attracting pushes
-- within one lease whatever rows it left behind (the next gateway to renew removes a gateway
-- expired for a minute, and its rows with it). Gateways write presence in batches.
CREATE TABLE gateways (
    id               uuid PRIMARY KEY,
    name             text NOT NULL,
    -- Where senders hand this gateway its devices' pushes (host:port of its delivery port).
    delivery_address text NOT NULL,
    started_at       timestamptz NOT NULL DEFAULT now(),
    lease_expires_at timestamptz NOT NULL
);

CREATE TABLE gateway_presence (
    device_id    bigint PRIMARY KEY REFERENCES devices (id) ON DELETE CASCADE,
    app_id       uuid NOT NULL,
    gateway_id   uuid NOT NULL REFERENCES gateways (id) ON DELETE CASCADE,
    connected_at timestamptz NOT NULL DEFAULT now()
);
-- "Is anyone of this app connected at all?", the fan-out's first question, is one probe here.
CREATE INDEX gateway_presence_app ON gateway_presence (app_id);
-- What a leaving gateway's rows cascade through.
CREATE INDEX gateway_presence_gateway ON gateway_presence (gateway_id);
