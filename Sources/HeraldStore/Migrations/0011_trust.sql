-- Who may do what, and a record of what they did (docs/security.md).
--
-- Client keys: an app's rules for the key its SDK embeds. Existing apps keep how they worked
-- (no identity verification, client access by registration id); new apps get the strict rules.
-- Operators switch an existing app over with PATCH /v1/apps/{appId} (docs/security.md).
ALTER TABLE apps ADD COLUMN identity_verification boolean NOT NULL DEFAULT false;
ALTER TABLE apps ALTER COLUMN identity_verification SET DEFAULT true;
ALTER TABLE apps ADD COLUMN legacy_client_access boolean NOT NULL DEFAULT true;
ALTER TABLE apps ALTER COLUMN legacy_client_access SET DEFAULT false;
-- The tags a client key may add or remove; NULL: any tag.
ALTER TABLE apps ADD COLUMN client_tags text[];

-- Each app's identity secret: the key of the HMAC its back-end computes over an alias, so that a
-- client key can bind that alias. Sealed under the master key like APNs credentials, with the
-- app and the sealing key's id as authenticated data. After a rotation the previous secret is
-- still accepted until previous_valid_until.
CREATE TABLE app_identity_secrets (
    app_id                  uuid PRIMARY KEY REFERENCES apps (id) ON DELETE CASCADE,
    sealed_secret           bytea NOT NULL,
    sealing_key_id          text NOT NULL,
    previous_sealed_secret  bytea,
    previous_sealing_key_id text,
    previous_valid_until    timestamptz,
    created_at              timestamptz NOT NULL DEFAULT now()
);

-- Keys: per-app admin keys beside server and client keys, and scopes for server keys (NULL:
-- every scope, as server keys had before).
ALTER TABLE api_keys DROP CONSTRAINT api_keys_kind_check;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_kind_check CHECK (kind IN ('server', 'client', 'admin'));
ALTER TABLE api_keys ADD COLUMN scopes text[];

-- The key that created a push (NULL for pushes from before, and for those made by herald-center).
ALTER TABLE pushes ADD COLUMN created_by_key uuid;

-- The audit log: append-only. Entries outlive the app they name (no foreign key), are never
-- changed, and are deleted only by retention once older than 30 days.
CREATE TABLE audit_events (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    occurred_at    timestamptz NOT NULL DEFAULT now(),
    app_id         uuid,
    -- 'admin' (the global admin token) or 'key' (key_id names it).
    actor          text NOT NULL CHECK (actor IN ('admin', 'key')),
    key_id         uuid,
    action         text NOT NULL,
    -- What the action touched: a push id, a key id, an environment.
    target         text,
    request_id     text,
    source_address text,
    details        jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_events_by_app ON audit_events (app_id, id);
CREATE INDEX audit_events_by_time ON audit_events (occurred_at);

CREATE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND OLD.occurred_at < now() - interval '30 days' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'audit_events is append-only: entries are never changed, and deleted only after 30 days';
END;
$$;
CREATE TRIGGER audit_events_append_only BEFORE UPDATE OR DELETE ON audit_events
    FOR EACH ROW EXECUTE FUNCTION audit_events_append_only();
