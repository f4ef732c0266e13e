-- Master keys, by id: each sealed credential names the master key that sealed it, so a new
-- master key can seal while the old one still opens (rotation without downtime), and a process
-- started with a wrong key is refused at start instead of failing every batch.
ALTER TABLE apns_credentials ADD COLUMN sealing_key_id text;

-- Every master key that has sealed in this database (its id only: HMAC-SHA256 of the key, never
-- the key). A process whose keys include none of them is refused at start.
CREATE TABLE sealing_keys (
    key_id        text PRIMARY KEY CHECK (key_id ~ '^[0-9a-f]{16}$'),
    first_used_at timestamptz NOT NULL DEFAULT now()
);
