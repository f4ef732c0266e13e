-- A push acknowledged over a device's long connection to herald-gateway (docs/gateway.md) is
-- counted `delivered_online`, beside APNs' `accepted`: targeted = accepted + delivered_online +
-- rejected + expired + canceled + skipped. Each batch keeps its devices reached online apart from
-- those APNs accepted, and a recall reaches both.
ALTER TABLE push_counters ADD COLUMN delivered_online bigint NOT NULL DEFAULT 0;
ALTER TABLE push_statistics_daily ADD COLUMN delivered_online bigint NOT NULL DEFAULT 0;
ALTER TABLE push_batches ADD COLUMN delivered_online_device_ids bigint[];

-- push.completed / push.canceled webhooks carry the devices reached online too.
CREATE OR REPLACE FUNCTION herald_webhook_push_finished() RETURNS trigger LANGUAGE plpgsql AS $$
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
                'delivered_online', COALESCE(c.delivered_online, 0),
                'rejected', COALESCE(c.rejected, 0), 'expired', COALESCE(c.expired, 0),
                'canceled', COALESCE(c.canceled, 0), 'skipped', COALESCE(c.skipped, 0),
                'tokens_invalidated', COALESCE(c.tokens_invalidated, 0),
                'rejected_by_reason', COALESCE(c.rejected_by_reason, '{}'::jsonb),
                'skipped_by_reason', COALESCE(c.skipped_by_reason, '{}'::jsonb))));
    RETURN NULL;
END
$$;
