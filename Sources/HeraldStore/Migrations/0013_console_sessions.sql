-- Signed-in sessions of the operations console (served by herald-api under /console). The browser
-- holds a random session token in an HttpOnly cookie; only its SHA-256 is stored here. A session
-- belongs to an app's key (and ends with it: revoking or deleting the key ends the session) or to
-- the global admin token (and ends when that token changes: admin_digest is SHA-256 of the
-- token's SHA-256).
CREATE TABLE console_sessions (
    token_hash   bytea PRIMARY KEY CHECK (length(token_hash) = 32),
    key_id       uuid REFERENCES api_keys (id) ON DELETE CASCADE,
    admin_digest bytea CHECK (admin_digest IS NULL OR length(admin_digest) = 32),
    -- Every form of the session carries it; a POST without it is refused.
    csrf_token   text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_seen_at timestamptz NOT NULL DEFAULT now(),
    CHECK ((key_id IS NULL) <> (admin_digest IS NULL))
);
CREATE INDEX console_sessions_by_last_seen ON console_sessions (last_seen_at);
