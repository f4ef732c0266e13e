-- Recurring schedules (docs/schedules.md). The first milestone's `schedules` table was never
-- read or written by anything: it is replaced.
DROP TABLE schedules;

CREATE TABLE schedules (
    id                    uuid PRIMARY KEY,
    app_id                uuid NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    name                  text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    -- The RRULE as Herald spells it, read in time_zone from starts_at_local ("2026-12-01T08:00").
    rrule                 text NOT NULL,
    time_zone             text NOT NULL,
    starts_at_local       text NOT NULL,
    -- The POST /v1/pushes body as the caller gave it (shown back), and what each occurrence's push
    -- is made of, composed once when the schedule was saved (PushBlueprint).
    push_request          jsonb NOT NULL,
    blueprint             jsonb NOT NULL,
    -- An occurrence found due later than this (an outage) is skipped and recorded, not sent late.
    late_window_s         integer NOT NULL DEFAULT 3600 CHECK (late_window_s BETWEEN 0 AND 86400),
    paused                boolean NOT NULL DEFAULT false,
    -- The next occurrence; NULL when the rule has ended.
    next_occurrence_at    timestamptz,
    pushes_created        integer NOT NULL DEFAULT 0,
    occurrences_skipped   integer NOT NULL DEFAULT 0,
    last_skipped_at       timestamptz,
    last_skip_reason      text,
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now(),
    UNIQUE (app_id, name)
);
CREATE INDEX schedules_due ON schedules (next_occurrence_at) WHERE NOT paused AND next_occurrence_at IS NOT NULL;

-- Each occurrence is a normal push; its schedule and occurrence are noted with it, once.
ALTER TABLE pushes ADD COLUMN schedule_id uuid REFERENCES schedules (id) ON DELETE SET NULL,
                   ADD COLUMN occurrence_at timestamptz;
CREATE UNIQUE INDEX pushes_schedule_occurrence ON pushes (schedule_id, occurrence_at) WHERE schedule_id IS NOT NULL;
