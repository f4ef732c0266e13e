-- Gauges that describe the whole system (pushes by state, the outbox's backlog, the oldest
-- unfinished push) are reported by one herald-center at a time, so that summing over centers
-- does not multiply them: the one holding this lease, renewed at every sweep.
CREATE TABLE system_reporter (
    id         int PRIMARY KEY CHECK (id = 1),
    holder     text NOT NULL,
    expires_at timestamptz NOT NULL
);
