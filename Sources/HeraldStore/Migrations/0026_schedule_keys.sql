-- The key that last saved a schedule: its occurrences are sent on that key's authority, so
-- revoking the key pauses the schedule (docs/security.md) and rotating it moves the schedule to
-- the new key. Schedules saved before this migration have none and are left as they are.
ALTER TABLE schedules ADD COLUMN saved_by_key uuid REFERENCES api_keys (id) ON DELETE SET NULL;
CREATE INDEX schedules_by_key ON schedules (saved_by_key) WHERE saved_by_key IS NOT NULL;
