-- Engagement (docs/engagement.md): what phones report back about a push they were sent —
-- `received` (the notification service extension ran), `opened`, `action` (a button, by its
-- identifier) and `dismissed` — through POST /v1/events.
--
-- Each (push, device, type, action) is kept once: the same report sent again, by a retrying SDK
-- or by both the extension and the app, finds its row and counts nothing. `action` is '' for the
-- types without one. The rows go with their push (the push retention deletes them).
CREATE TABLE push_engagement_events (
    push_id      uuid NOT NULL REFERENCES pushes (id) ON DELETE CASCADE,
    device_id    bigint NOT NULL,
    type         text NOT NULL CHECK (type IN ('received', 'opened', 'action', 'dismissed')),
    action       text NOT NULL DEFAULT '',
    -- Whether the action carried text input (its text is never sent to Herald).
    text_input   boolean NOT NULL DEFAULT false,
    -- The device's clock when it happened, and the server's when it was reported.
    occurred_at  timestamptz NOT NULL,
    reported_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (push_id, device_id, type, action),
    CHECK ((type = 'action') = (action <> ''))
);

-- The counts a push's status reads, kept as events are stored: never a count(*) over the events.
-- A push's counts are spread over 16 rows (each batch of events adds to one, picked at random) so
-- that thousands of phones reporting the same broadcast at once do not all wait for one row's
-- lock; a read sums at most 16 rows.
CREATE TABLE push_engagement_counts (
    push_id    uuid NOT NULL REFERENCES pushes (id) ON DELETE CASCADE,
    shard      smallint NOT NULL,
    received   bigint NOT NULL DEFAULT 0,
    opened     bigint NOT NULL DEFAULT 0,
    dismissed  bigint NOT NULL DEFAULT 0,
    -- Devices that pressed each action: {"identifier": count}.
    actions    jsonb NOT NULL DEFAULT '{}',
    PRIMARY KEY (push_id, shard)
);

-- "Was this device sent this push?", asked for every reported event: the batches of the push whose
-- device range holds the device. A push's batches overlap (one series per environment and topic,
-- and per local-time wave), so neither bound alone finds them; a box over (device range, push) in a
-- GiST index does, with PostgreSQL's own operators: x from the first to the last device, y the
-- push id's hash (a hash two pushes share only adds a candidate the query's push_id test drops).
CREATE INDEX push_batches_by_device_range ON push_batches USING gist (
    box(point(first_device, uuid_hash(push_id)), point(last_device, uuid_hash(push_id))));
