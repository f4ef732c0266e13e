-- herald-center's bookkeeping: what a fan-out needs to resume, pace, pause and re-drive, and
-- what a recall needs to find the devices that accepted a push.

ALTER TABLE pushes
    -- Devices the audience held when a throttled fan-out started (for "finish within" pacing
    -- and the ETA); NULL when nobody needed it.
    ADD COLUMN audience_size bigint,
    -- When emission is planned to end (throttled pushes); NULL when unknown.
    ADD COLUMN eta_at timestamptz,
    -- Set while an operator holds the fan-out; cleared to resume.
    ADD COLUMN paused_at timestamptz;

ALTER TABLE push_batches
    -- Where the batch goes: with the push's audience and the device range they rebuild the
    -- batch exactly when it has to be produced again.
    ADD COLUMN environment text NOT NULL DEFAULT 'production' CHECK (environment IN ('production', 'sandbox')),
    -- The devices' topic (their app's bundle id); the apns-topic adds the push type's suffix.
    ADD COLUMN topic text NOT NULL DEFAULT '',
    -- Set once the broker acknowledged the batch. A batch recorded but never acknowledged (its
    -- center died in between) is produced again by whoever resumes the fan-out.
    ADD COLUMN produced_at timestamptz,
    -- Times the batch was produced again because no outcome came back in time.
    ADD COLUMN redriven integer NOT NULL DEFAULT 0,
    -- The devices APNs accepted, written with the batch's outcome: a recall goes to them.
    ADD COLUMN accepted_device_ids bigint[];

-- Fan-outs to take over: claimed by a center that stopped renewing its claim.
CREATE INDEX pushes_claimed ON pushes (claimed_at) WHERE state = 'fanning_out';
-- Canceled pushes whose never-sent remainder is not counted yet.
CREATE INDEX pushes_cancel_unaccounted ON pushes (canceled_at) WHERE state = 'canceled' AND fanout_finished_at IS NULL;
