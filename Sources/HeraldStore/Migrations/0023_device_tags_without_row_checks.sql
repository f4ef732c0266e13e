-- A device's tags go with the device through one statement-level trigger instead of a foreign
-- key. The key checked every inserted tag row against `devices` one at a time (a quarter of the
-- time of a million-device import's tags: issue 22, docs/benchmarks.md#import) and deleted a
-- device's tags one device at a time.
--
-- Nothing is lost by it: every writer of device_tags writes its device's row first in the same
-- transaction (a registration's upsert, a tag change's UPDATE, an import's merge), so the device
-- is locked or not yet visible to anyone else until the tags are in, and a device's deletion waits
-- for them and then deletes them below.
ALTER TABLE device_tags DROP CONSTRAINT device_tags_device_id_fkey;

-- Runs at any depth: an app's deletion cascades to its devices, and their tags go here too. Their
-- counts were taken off before (herald_count_deleted_device_tags, or nothing when the app goes):
-- the tags' own delete trigger finds no device for them and counts nothing.
CREATE FUNCTION herald_delete_tags_of_deleted_devices() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM device_tags t USING deleted d WHERE t.device_id = d.id;
    RETURN NULL;
END
$$;

CREATE TRIGGER device_tags_deleted_with_devices AFTER DELETE ON devices
    REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION herald_delete_tags_of_deleted_devices();

