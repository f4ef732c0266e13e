-- Limits on what one device or alias holds, enforced here, where every path writes: the Open
-- API's registrations and changes, bulk imports, anything else. A statement that would break
-- one fails with SQLSTATE HL001 (tags per device) or HL002 (devices per alias); herald-api
-- answers 422 naming the field (docs/limits.md). The numbers are DeviceLimits' in HeraldStore.

CREATE FUNCTION herald_check_tags_per_device() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    crowded bigint;
BEGIN
    SELECT t.device_id INTO crowded
    FROM device_tags t
    WHERE t.device_id IN (SELECT DISTINCT device_id FROM added)
    GROUP BY t.device_id HAVING count(*) > 100
    LIMIT 1;
    IF crowded IS NOT NULL THEN
        RAISE EXCEPTION 'device % would carry more than 100 tags', crowded
            USING ERRCODE = 'HL001', COLUMN = 'tags';
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER device_tags_at_most_100_per_device
    AFTER INSERT ON device_tags REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION herald_check_tags_per_device();

-- Checks the aliases of `changed` (the rows a statement inserted or gave another alias).
CREATE FUNCTION herald_check_devices_per_alias(changed_app uuid[], changed_alias text[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    crowded text;
BEGIN
    SELECT d.alias INTO crowded
    FROM devices d
    JOIN unnest(changed_app, changed_alias) AS c(app_id, alias) ON d.app_id = c.app_id AND d.alias = c.alias
    GROUP BY d.app_id, d.alias HAVING count(*) > 100
    LIMIT 1;
    IF crowded IS NOT NULL THEN
        RAISE EXCEPTION 'alias "%" would name more than 100 devices', crowded
            USING ERRCODE = 'HL002', COLUMN = 'alias';
    END IF;
END
$$;

CREATE FUNCTION herald_check_inserted_aliases() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM herald_check_devices_per_alias(array_agg(app_id), array_agg(alias))
    FROM (SELECT DISTINCT app_id, alias FROM inserted WHERE alias IS NOT NULL) AS c
    HAVING count(*) > 0;
    RETURN NULL;
END
$$;

CREATE FUNCTION herald_check_updated_aliases() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM herald_check_devices_per_alias(array_agg(app_id), array_agg(alias))
    FROM (
        SELECT DISTINCT a.app_id, a.alias
        FROM after_update a JOIN before_update b ON b.id = a.id
        WHERE a.alias IS NOT NULL AND a.alias IS DISTINCT FROM b.alias
    ) AS c
    HAVING count(*) > 0;
    RETURN NULL;
END
$$;

CREATE TRIGGER devices_at_most_100_per_alias_inserted
    AFTER INSERT ON devices REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION herald_check_inserted_aliases();

CREATE TRIGGER devices_at_most_100_per_alias_updated
    AFTER UPDATE ON devices REFERENCING OLD TABLE AS before_update NEW TABLE AS after_update
    FOR EACH STATEMENT EXECUTE FUNCTION herald_check_updated_aliases();
