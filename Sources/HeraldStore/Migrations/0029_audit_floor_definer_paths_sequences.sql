-- How long the audit log is kept at least is the owner's decision, not the runtime role's: a
-- service that could name any retention could erase every entry older than 30 days. One row,
-- which only the owner may change (docs/security.md); the retention function never deletes
-- an entry younger than it, whatever its caller asks. 400 days is the center's default
-- retention; an owner who keeps less lowers it here (never below the 30 days the row trigger
-- insists on).
CREATE TABLE herald_audit_policy (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    kept_at_least interval NOT NULL DEFAULT interval '400 days'
        CHECK (kept_at_least >= interval '30 days')
);
INSERT INTO herald_audit_policy DEFAULT VALUES;

CREATE OR REPLACE FUNCTION herald_delete_old_audit_events(older_than interval, batch integer) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
    deleted integer;
    floor_age interval;
BEGIN
    SELECT kept_at_least INTO floor_age FROM herald_audit_policy;
    DELETE FROM audit_events WHERE id IN (
        SELECT id FROM audit_events
        WHERE occurred_at < now() - greatest(older_than, coalesce(floor_age, interval '400 days'), interval '30 days')
        ORDER BY id LIMIT batch);
    GET DIAGNOSTICS deleted = ROW_COUNT;
    RETURN deleted;
END;
$$;

DO $$
DECLARE
    schema_name text := current_schema();
BEGIN
    -- The owner's functions run with a search path nobody else can add to: the catalog first,
    -- Herald's schema, and temporary objects last (so a temporary table named audit_events
    -- cannot stand in for the real one).
    EXECUTE format(
        'ALTER FUNCTION herald_delete_old_audit_events(interval, integer) SET search_path = pg_catalog, %I, pg_temp',
        schema_name);
    EXECUTE format('ALTER FUNCTION herald_analyze_devices() SET search_path = pg_catalog, %I, pg_temp', schema_name);
    -- Functions are executable by everyone unless revoked: only the runtime role (and the owner)
    -- may call the two that act as the owner.
    REVOKE EXECUTE ON FUNCTION herald_delete_old_audit_events(interval, integer) FROM PUBLIC;
    REVOKE EXECUTE ON FUNCTION herald_analyze_devices() FROM PUBLIC;

    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'herald_runtime') THEN
        RETURN;
    END IF;
    GRANT EXECUTE ON FUNCTION herald_delete_old_audit_events(interval, integer) TO herald_runtime;
    GRANT EXECUTE ON FUNCTION herald_analyze_devices() TO herald_runtime;
    -- The policy is read, never written, by the services (the default privileges of migration
    -- 0028 granted more).
    REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON herald_audit_policy FROM herald_runtime;
    GRANT SELECT ON herald_audit_policy TO herald_runtime;
    -- Sequences are drawn from, never set: no setval for the services, now or for later tables.
    EXECUTE format('REVOKE UPDATE ON ALL SEQUENCES IN SCHEMA %I FROM herald_runtime', schema_name);
    EXECUTE format(
        'ALTER DEFAULT PRIVILEGES IN SCHEMA %I REVOKE UPDATE ON SEQUENCES FROM herald_runtime', schema_name);
END;
$$;
