-- More webhook events (docs/webhooks.md): push.failed once per push, and a replayed delivery's
-- own retry window.

-- A dead delivery sent again gets a new 24-hour window, counted from its replay instead of the
-- event's creation.
ALTER TABLE webhook_deliveries ADD COLUMN retry_from timestamptz;

-- push.failed is written at the first credential refusal a push's outcomes report; later batches
-- of the same push refused for the same cause find it there.
CREATE UNIQUE INDEX webhook_events_push_failed_once ON webhook_events ((data ->> 'push_id'))
    WHERE type = 'push.failed';

-- Like herald_webhook_event, for push.failed: nothing when the push has one already.
CREATE FUNCTION herald_webhook_push_failed(app uuid, event_data jsonb) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    event uuid;
BEGIN
    IF NOT EXISTS (
        SELECT 1 FROM webhook_endpoints WHERE app_id = app AND enabled AND 'push.failed' = ANY(event_types)
    ) THEN
        RETURN;
    END IF;
    INSERT INTO webhook_events (id, app_id, type, data) VALUES (gen_random_uuid(), app, 'push.failed', event_data)
    ON CONFLICT ((data ->> 'push_id')) WHERE type = 'push.failed' DO NOTHING
    RETURNING id INTO event;
    IF event IS NULL THEN
        RETURN;
    END IF;
    INSERT INTO webhook_deliveries (endpoint_id, event_id)
    SELECT id, event FROM webhook_endpoints WHERE app_id = app AND enabled AND 'push.failed' = ANY(event_types);
END
$$;
