-- Local-time delivery and quiet hours that hold (docs/local-time.md): a push sent "at 09:00 in each
-- device's own time zone", or held for the devices in their quiet hours until the hours end, fans
-- out in waves — one per instant its devices' time zones reach — each a keyset pass over the
-- audience narrowed to the wave's time zones.

-- What the push's options asked about time, as JSON (NULL: nothing): {"local_time": "09:00",
-- "local_date": "2026-12-01", "quiet_hours": "hold", "time_to_live_s": 3600} — every key optional;
-- a push in waves has no expires_at: each wave's notifications expire time_to_live_s after it starts.
ALTER TABLE pushes ADD COLUMN timing jsonb,
                   -- the wave being (or next to be) fanned out; waves: how many were planned
                   -- (NULL: not a push in waves, or not planned yet).
                   ADD COLUMN wave integer NOT NULL DEFAULT 0,
                   ADD COLUMN waves integer;

-- The plan, made when the push's fan-out first starts: a wave's devices are the audience's devices
-- whose time zone is one of `time_zones` ('' stands for devices without one).
CREATE TABLE push_waves (
    push_id        uuid NOT NULL REFERENCES pushes (id) ON DELETE CASCADE,
    wave           integer NOT NULL,
    due_at         timestamptz NOT NULL,
    time_zones     text[] NOT NULL,
    devices        bigint NOT NULL,
    -- the sequence of the wave's first job batch, set when the wave starts (rebuilding a batch
    -- reads its wave's time zones).
    first_sequence integer,
    PRIMARY KEY (push_id, wave)
);

-- Waves restart the keyset at the first device: their pages' bitmaps are told apart by wave.
ALTER TABLE push_targets ADD COLUMN wave integer NOT NULL DEFAULT 0;
ALTER TABLE push_targets DROP CONSTRAINT push_targets_pkey;
ALTER TABLE push_targets ADD PRIMARY KEY (push_id, wave, first_device);
