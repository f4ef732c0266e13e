-- Outcome webhooks (docs/webhooks.md): an app's endpoints, the events written in the transaction
-- of the change they report, one delivery per subscribed endpoint and event, and the attempts.

CREATE TABLE webhook_endpoints (
    id                    uuid PRIMARY KEY,
    app_id                uuid NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    url                   text NOT NULL CHECK (octet_length(url) BETWEEN 8 AND 2048),
    description           text CHECK (description IS NULL OR length(description) <= 200),
    event_types           text[] NOT NULL CHECK (cardinality(event_types) >= 1),
    max_concurrency       integer NOT NULL DEFAULT 4 CHECK (max_concurrency BETWEEN 1 AND 32),
    -- The signing secret, sealed under the master key (like APNs keys); during a rotation's grace
    -- period the previous one signs too.
    secret_sealed         bytea NOT NULL,
    sealing_key_id        text,
    previous_secret_sealed bytea,
    previous_sealing_key_id text,
    previous_secret_until timestamptz,
    enabled               boolean NOT NULL DEFAULT true,
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_endpoints_by_app ON webhook_endpoints (app_id);

CREATE TABLE webhook_events (
    id         uuid PRIMARY KEY,
    app_id     uuid NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    type       text NOT NULL,
    data       jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_events_by_age ON webhook_events (created_at);

-- One per endpoint and event. pending → delivered, or dead after the retry window; a lease keeps
-- two centers from sending the same delivery at once (a center that dies leaves it to the next).
CREATE TABLE webhook_deliveries (
    endpoint_id     uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    event_id        uuid NOT NULL REFERENCES webhook_events (id) ON DELETE CASCADE,
    state           text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'dead')),
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    leased_until    timestamptz,
    leased_by       text,
    finished_at     timestamptz,
    PRIMARY KEY (endpoint_id, event_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_dead ON webhook_deliveries (endpoint_id, finished_at) WHERE state = 'dead';

CREATE TABLE webhook_attempts (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    endpoint_id uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    event_id    uuid NOT NULL,
    attempted_at timestamptz NOT NULL DEFAULT now(),
    -- The HTTP status, or NULL when none came (timeout, refused connection: see error).
    status      smallint,
    error       text,
    duration_ms integer NOT NULL
);
CREATE INDEX webhook_attempts_by_endpoint ON webhook_attempts (endpoint_id, id DESC);

-- Writes an event of `event_type` for `app`, and a delivery for each of the app's enabled
-- endpoints subscribed to it. Nothing (not even the event) when no endpoint wants it.
CREATE FUNCTION herald_webhook_event(app uuid, event_type text, event_data jsonb) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    event uuid;
BEGIN
    IF NOT EXISTS (
        SELECT 1 FROM webhook_endpoints WHERE app_id = app AND enabled AND event_type = ANY(event_types)
    ) THEN
        RETURN;
    END IF;
    event := gen_random_uuid();
    INSERT INTO webhook_events (id, app_id, type, data) VALUES (event, app, event_type, event_data);
    INSERT INTO webhook_deliveries (endpoint_id, event_id)
    SELECT id, event FROM webhook_endpoints WHERE app_id = app AND enabled AND event_type = ANY(event_types);
END
$$;

-- push.completed / push.canceled: written by the statement that changes the push's state. A row
-- trigger with a WHEN clause: the fan-out updates pushes page after page, and the condition is
-- checked there without calling a function (a statement trigger over transition tables would copy
-- every updated row of every such statement).
CREATE FUNCTION herald_webhook_push_finished() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    c push_counters%ROWTYPE;  -- all NULL when the push has no counters row
BEGIN
    SELECT * INTO c FROM push_counters WHERE push_id = NEW.id;
    PERFORM herald_webhook_event(
        NEW.app_id, 'push.' || NEW.state,
        jsonb_build_object(
            'push_id', NEW.id,
            'counters', jsonb_build_object(
                'targeted', COALESCE(c.targeted, 0), 'accepted', COALESCE(c.accepted, 0),
                'rejected', COALESCE(c.rejected, 0), 'expired', COALESCE(c.expired, 0),
                'canceled', COALESCE(c.canceled, 0), 'tokens_invalidated', COALESCE(c.tokens_invalidated, 0),
                'rejected_by_reason', COALESCE(c.rejected_by_reason, '{}'::jsonb))));
    RETURN NULL;
END
$$;

CREATE TRIGGER pushes_finished_webhooks AFTER UPDATE OF state ON pushes
    FOR EACH ROW WHEN (NEW.state IN ('completed', 'canceled') AND OLD.state IS DISTINCT FROM NEW.state)
    EXECUTE FUNCTION herald_webhook_push_finished();
