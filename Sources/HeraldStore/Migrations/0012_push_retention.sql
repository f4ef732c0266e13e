-- Pushes are kept for a retention window (HERALD_CENTER_PUSH_RETENTION_DAYS); older finished ones
-- are deleted with their counters, batches and failed deliveries, after their numbers are added to
-- this per-day aggregate, which the statistics read beside the pushes still kept.
CREATE TABLE push_statistics_daily (
    app_id             uuid NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    -- The UTC day the pushes were created on.
    day                date NOT NULL,
    state              text NOT NULL,
    pushes             bigint NOT NULL DEFAULT 0,
    targeted           bigint NOT NULL DEFAULT 0,
    accepted           bigint NOT NULL DEFAULT 0,
    rejected           bigint NOT NULL DEFAULT 0,
    expired            bigint NOT NULL DEFAULT 0,
    canceled           bigint NOT NULL DEFAULT 0,
    tokens_invalidated bigint NOT NULL DEFAULT 0,
    rejected_by_reason jsonb NOT NULL DEFAULT '{}',
    PRIMARY KEY (app_id, day, state)
);

-- {"a": 1} + {"a": 2, "b": 1} = {"a": 3, "b": 1}: rejection counts by reason, added up.
CREATE FUNCTION herald_add_counts(a jsonb, b jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
    SELECT COALESCE(jsonb_object_agg(key, total), '{}'::jsonb) FROM (
        SELECT key, sum(value::bigint) AS total
        FROM (SELECT * FROM jsonb_each_text(COALESCE(a, '{}')) UNION ALL SELECT * FROM jsonb_each_text(COALESCE(b, '{}'))) entries
        GROUP BY key) sums
$$;
CREATE AGGREGATE herald_sum_counts(jsonb) (SFUNC = herald_add_counts, STYPE = jsonb, INITCOND = '{}');

-- The retention's scan: finished pushes, oldest first.
CREATE INDEX pushes_finished_by_age ON pushes (created_at) WHERE state IN ('completed', 'canceled');
