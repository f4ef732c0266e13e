-- Engagement webhooks (docs/webhooks.md):
--
-- `engagement.batch` (opt-in, per device) is written by the statement that stores a batch of
-- events: one webhook event per push of the events counted then.
--
-- `push.engagement` is a push's engagement totals, at most one a push per minute while phones
-- report: storing events leaves a mark here (for an app with an endpoint for the type), due a
-- minute later; herald-center's webhook dispatcher takes the due marks and writes each push's
-- totals as it stands then. Phones reporting a broadcast for hours make one event a minute, not
-- one per phone.
CREATE TABLE push_engagement_reports (
    push_id uuid PRIMARY KEY REFERENCES pushes (id) ON DELETE CASCADE,
    app_id  uuid NOT NULL,
    due_at  timestamptz NOT NULL
);
CREATE INDEX push_engagement_reports_due ON push_engagement_reports (due_at);
