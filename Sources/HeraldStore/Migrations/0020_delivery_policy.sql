-- Quiet hours and frequency caps (docs/delivery-policy.md): an app's delivery policy, enforced at
-- fan-out for campaign pushes. A device the policy leaves out is skipped — a terminal outcome
-- counted per reason — so targeted = accepted + rejected + expired + canceled + skipped.

-- {"quiet_hours": {"start_minute": 1320, "end_minute": 480}, "default_time_zone": "Europe/Berlin",
--  "frequency_cap": {"max_pushes": 3, "window_seconds": 86400}}; NULL: no policy.
ALTER TABLE apps ADD COLUMN delivery_policy jsonb;

ALTER TABLE push_counters ADD COLUMN skipped bigint NOT NULL DEFAULT 0,
                          ADD COLUMN skipped_by_reason jsonb NOT NULL DEFAULT '{}';
ALTER TABLE push_statistics_daily ADD COLUMN skipped bigint NOT NULL DEFAULT 0,
                                  ADD COLUMN skipped_by_reason jsonb NOT NULL DEFAULT '{}';

-- The devices a campaign push put into job batches, one row per fan-out page: bit i of `bits`
-- (most significant bit first) is device first_device + i. Read by later campaigns of the app to
-- count each device's pushes in the cap's window, and by a re-driven batch of the push itself to
-- leave out the devices its policy skipped. Written only for apps with a policy.
CREATE TABLE push_targets (
    push_id      uuid NOT NULL REFERENCES pushes (id) ON DELETE CASCADE,
    app_id       uuid NOT NULL,
    first_device bigint NOT NULL,
    last_device  bigint NOT NULL,
    bits         bytea NOT NULL,
    targeted_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (push_id, first_device)
);
CREATE INDEX push_targets_by_app ON push_targets (app_id, targeted_at, last_device);

-- push.completed / push.canceled webhooks carry the skipped devices too.
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
                'rejected', COALESCE(c.rejected, 0), 'expired', COALESCE(c.expired, 0),
                'canceled', COALESCE(c.canceled, 0), 'skipped', COALESCE(c.skipped, 0),
                'tokens_invalidated', COALESCE(c.tokens_invalidated, 0),
                'rejected_by_reason', COALESCE(c.rejected_by_reason, '{}'::jsonb),
                'skipped_by_reason', COALESCE(c.skipped_by_reason, '{}'::jsonb))));
    RETURN NULL;
END
$$;
