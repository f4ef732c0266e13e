-- The audit log cannot be emptied in one statement either: TRUNCATE skips row triggers, so it
-- gets a trigger of its own.
CREATE FUNCTION audit_events_no_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_events is append-only: it is never truncated; retention deletes entries older than 30 days';
END;
$$;
CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit_events
    FOR EACH STATEMENT EXECUTE FUNCTION audit_events_no_truncate();

-- Retention of the audit log, for a role that may not delete from it: runs as the owner (the
-- role that migrates), deletes only entries past the retention it is given (30 days at least,
-- as the row trigger also insists), a batch at a time. Returns how many went.
CREATE FUNCTION herald_delete_old_audit_events(older_than interval, batch integer) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    deleted integer;
BEGIN
    DELETE FROM audit_events WHERE id IN (
        SELECT id FROM audit_events
        WHERE occurred_at < now() - greatest(older_than, interval '30 days')
        ORDER BY id LIMIT batch);
    GET DIAGNOSTICS deleted = ROW_COUNT;
    RETURN deleted;
END;
$$;

-- Fresh statistics after a bulk import: ANALYZE takes the tables' owner, which the runtime role
-- is not.
CREATE FUNCTION herald_analyze_devices() RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    ANALYZE devices, device_tags;
END;
$$;

-- Client-writable attributes: NULL lets a client key set any attribute (apps from before keep
-- that until their admin names the allowed ones); new apps start with none, and with no client
-- tags either.
ALTER TABLE apps ADD COLUMN client_attributes text[];
ALTER TABLE apps ALTER COLUMN client_attributes SET DEFAULT '{}';
ALTER TABLE apps ALTER COLUMN client_tags SET DEFAULT '{}';

-- herald_runtime: the role the services may run as (a login role granted membership in it),
-- apart from the role that owns the tables and migrates them. It reads and writes Herald's
-- tables, but may only read and append the audit log and only read which migrations ran.
-- Roles belong to the whole cluster: made once, here, when the migrating role may make roles;
-- otherwise a notice says so, and a database administrator makes it (docs/security.md).
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'herald_runtime') THEN
        CREATE ROLE herald_runtime NOLOGIN;
    END IF;
EXCEPTION
    WHEN insufficient_privilege THEN
        RAISE NOTICE 'role herald_runtime not made: the migrating role may not create roles (docs/security.md)';
    WHEN duplicate_object OR unique_violation THEN
        NULL; -- made at the same moment by a migration of another database in the cluster
END;
$$;

DO $$
DECLARE
    schema_name text := current_schema();
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'herald_runtime') THEN
        RETURN;
    END IF;
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO herald_runtime', schema_name);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA %I TO herald_runtime', schema_name);
    EXECUTE format('GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA %I TO herald_runtime', schema_name);
    EXECUTE format('GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA %I TO herald_runtime', schema_name);
    -- Tables and sequences later migrations make get the same grants.
    EXECUTE format(
        'ALTER DEFAULT PRIVILEGES IN SCHEMA %I GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO herald_runtime',
        schema_name);
    EXECUTE format(
        'ALTER DEFAULT PRIVILEGES IN SCHEMA %I GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO herald_runtime',
        schema_name);
    REVOKE UPDATE, DELETE, TRUNCATE ON audit_events FROM herald_runtime;
    REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON herald_schema_migrations FROM herald_runtime;
END;
$$;
