-- Templates and personalization (docs/templates.md).

-- A push whose notification has placeholders or localized variants keeps its compiled form here:
-- {"default": payload, "localized": {"de": payload, …}}, each payload's alert texts still holding
-- their placeholders. The fan-out renders it per device; NULL for every other push, which sends
-- `payload` as it is.
ALTER TABLE pushes ADD COLUMN template bytea;

-- Stored notification templates: a named notification a push names by id (its notification is
-- copied into the push when it is accepted, so changing or deleting a template changes no
-- accepted push).
CREATE TABLE templates (
    id           uuid PRIMARY KEY,
    app_id       uuid NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    name         text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    description  text CHECK (description IS NULL OR length(description) <= 500),
    notification jsonb NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (app_id, name)
);
