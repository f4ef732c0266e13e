-- The device numbers an app's statistics show — devices by environment and status, and the same
-- per tag — kept up to date instead of counted: count(*) over an app's ten million devices takes
-- seconds, on every statistics request.
--
-- Every statement that changes devices or device_tags appends its net change to
-- device_count_changes (statement-level triggers over transition tables: one row per group a
-- statement touched, not one per device), so writers never queue behind one hot counter row —
-- a million-device import and the registrations arriving meanwhile append side by side.
-- herald-center folds the changes into device_counts every few seconds; a reader adds
-- device_counts and the changes not folded yet, so the numbers are exact whether the fold has
-- run or not.
CREATE TABLE device_counts (
    app_id      uuid NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    -- '' for all the app's devices; otherwise a tag (tags are never empty).
    tag         text NOT NULL,
    environment text NOT NULL,
    status      text NOT NULL,
    devices     bigint NOT NULL,
    PRIMARY KEY (app_id, tag, environment, status)
);

-- Groups the fold brought to zero (a tag no device carries any more), deleted after each fold.
CREATE INDEX device_counts_empty ON device_counts (app_id) WHERE devices = 0;

-- No foreign key: changes written while an app is deleted would fail it; the fold drops the
-- changes of apps that are gone.
CREATE TABLE device_count_changes (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    app_id      uuid NOT NULL,
    tag         text NOT NULL,
    environment text NOT NULL,
    status      text NOT NULL,
    devices     bigint NOT NULL
);
CREATE INDEX device_count_changes_by_app ON device_count_changes (app_id, tag);

-- New devices: counted in their group.
CREATE FUNCTION herald_count_inserted_devices() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO device_count_changes (app_id, tag, environment, status, devices)
    SELECT app_id, '', environment, status, count(*) FROM inserted GROUP BY app_id, environment, status;
    RETURN NULL;
END
$$;

-- A device whose environment or status changed moves from one group to another, with its tags.
CREATE FUNCTION herald_count_updated_devices() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO device_count_changes (app_id, tag, environment, status, devices)
    SELECT app_id, tag, environment, status, sum(devices) FROM (
        WITH moved AS (
            SELECT o.id, o.app_id, o.environment AS old_environment, o.status AS old_status,
                   n.environment AS new_environment, n.status AS new_status
            FROM old_rows o JOIN new_rows n ON n.id = o.id
            WHERE (o.environment, o.status) IS DISTINCT FROM (n.environment, n.status)
        )
        SELECT m.app_id, tags.tag, side.environment, side.status, side.devices
        FROM moved m
        CROSS JOIN LATERAL (SELECT '' AS tag UNION ALL SELECT t.tag FROM device_tags t WHERE t.device_id = m.id) tags
        CROSS JOIN LATERAL (VALUES (m.old_environment, m.old_status, -1), (m.new_environment, m.new_status, 1))
            AS side (environment, status, devices)
    ) changes
    GROUP BY app_id, tag, environment, status HAVING sum(devices) <> 0;
    RETURN NULL;
END
$$;

-- Deleted devices leave their group. When the app itself is being deleted (a cascade, so the
-- trigger runs nested) its counts go with it and nothing is written.
CREATE FUNCTION herald_count_deleted_devices() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF pg_trigger_depth() > 1 THEN
        RETURN NULL;
    END IF;
    INSERT INTO device_count_changes (app_id, tag, environment, status, devices)
    SELECT app_id, '', environment, status, -count(*) FROM deleted GROUP BY app_id, environment, status;
    RETURN NULL;
END
$$;

-- A device's tags leave its tag groups before the device goes: the cascade that deletes them
-- runs after the device row is gone, when their environment and status can no longer be read.
-- One row per deleted device with tags — deleting devices is rare (DELETE, purging invalid
-- tokens after days).
CREATE FUNCTION herald_count_deleted_device_tags() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF pg_trigger_depth() > 1 THEN
        RETURN OLD;
    END IF;
    INSERT INTO device_count_changes (app_id, tag, environment, status, devices)
    SELECT OLD.app_id, t.tag, OLD.environment, OLD.status, -1 FROM device_tags t WHERE t.device_id = OLD.id;
    RETURN OLD;
END
$$;

-- Tags added to or removed from devices that stay. A tag row whose device is gone was counted
-- by the trigger above (the look-up finds no device).
--
-- Each device is looked up by its key (OFFSET 0 keeps the planner from turning the look-up into
-- a join): a join's plan rests on the tables' statistics, and with stale ones (a table that grew
-- by a million rows since it was last analyzed) a nested loop over a sequential scan once held a
-- million-tag insert for twenty minutes. Look-ups cost about a microsecond a row, always.
CREATE FUNCTION herald_count_tag_changes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO device_count_changes (app_id, tag, environment, status, devices)
        SELECT t.app_id, t.tag, d.environment, d.status, count(*)
        FROM inserted t
        CROSS JOIN LATERAL (SELECT environment, status FROM devices WHERE id = t.device_id OFFSET 0) d
        GROUP BY t.app_id, t.tag, d.environment, d.status;
    ELSE
        INSERT INTO device_count_changes (app_id, tag, environment, status, devices)
        SELECT t.app_id, t.tag, d.environment, d.status, -count(*)
        FROM deleted t
        CROSS JOIN LATERAL (SELECT environment, status FROM devices WHERE id = t.device_id OFFSET 0) d
        GROUP BY t.app_id, t.tag, d.environment, d.status;
    END IF;
    RETURN NULL;
END
$$;

-- Migration 0007's check of tags per device, made independent of statistics the same way: each
-- device the statement gave tags is looked up in device_tags by its own index, reading at most
-- 101 of its tags. (As a join, the planner took the statement's distinct devices for 200 — it
-- has no statistics for a statement's rows — and could scan all of device_tags for each.)
CREATE OR REPLACE FUNCTION herald_check_tags_per_device() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    crowded bigint;
BEGIN
    SELECT a.device_id INTO crowded
    FROM (SELECT DISTINCT device_id FROM added) a
    CROSS JOIN LATERAL (
        SELECT count(*) AS tags FROM (SELECT 1 FROM device_tags t WHERE t.device_id = a.device_id LIMIT 101) held
    ) c
    WHERE c.tags > 100
    LIMIT 1;
    IF crowded IS NOT NULL THEN
        RAISE EXCEPTION 'device % would carry more than 100 tags', crowded
            USING ERRCODE = 'HL001', COLUMN = 'tags';
    END IF;
    RETURN NULL;
END
$$;

-- Nothing writes while the counts are taken and the triggers made.
LOCK TABLE devices, device_tags IN SHARE ROW EXCLUSIVE MODE;

INSERT INTO device_counts (app_id, tag, environment, status, devices)
SELECT app_id, '', environment, status, count(*) FROM devices GROUP BY app_id, environment, status;
INSERT INTO device_counts (app_id, tag, environment, status, devices)
SELECT t.app_id, t.tag, d.environment, d.status, count(*)
FROM device_tags t JOIN devices d ON d.id = t.device_id GROUP BY t.app_id, t.tag, d.environment, d.status;

CREATE TRIGGER devices_counted_on_insert AFTER INSERT ON devices
    REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION herald_count_inserted_devices();
CREATE TRIGGER devices_counted_on_update AFTER UPDATE ON devices
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION herald_count_updated_devices();
CREATE TRIGGER devices_counted_on_delete AFTER DELETE ON devices
    REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION herald_count_deleted_devices();
CREATE TRIGGER device_tags_counted_before_device_delete BEFORE DELETE ON devices
    FOR EACH ROW EXECUTE FUNCTION herald_count_deleted_device_tags();
CREATE TRIGGER device_tags_counted_on_insert AFTER INSERT ON device_tags
    REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION herald_count_tag_changes();
CREATE TRIGGER device_tags_counted_on_delete AFTER DELETE ON device_tags
    REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION herald_count_tag_changes();
