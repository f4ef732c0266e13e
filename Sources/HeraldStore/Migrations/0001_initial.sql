-- Herald's first schema: apps and their keys and APNs credentials, devices, pushes with their
-- counters, batches and failed deliveries, the outbox and schedules.
-- Applied by MigrationRunner in one transaction, under an advisory lock.

CREATE TABLE apps (
    id          uuid PRIMARY KEY,
    name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    -- The apns-topic of alert pushes (the app's bundle id).
    bundle_id   text NOT NULL CHECK (length(bundle_id) BETWEEN 1 AND 255),
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- API keys are stored as SHA-256 hashes; the key itself is shown once, at creation.
CREATE TABLE api_keys (
    id           uuid PRIMARY KEY,
    app_id       uuid NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    kind         text NOT NULL CHECK (kind IN ('server', 'client')),
    key_hash     bytea NOT NULL UNIQUE CHECK (length(key_hash) = 32),
    -- The first characters of the key, so people can tell keys apart in listings.
    key_prefix   text NOT NULL,
    name         text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz
);
CREATE INDEX api_keys_by_app ON api_keys (app_id);

-- One APNs credential per app and environment. The private key (.p8) or client certificate
-- (PKCS#12/PEM) is sealed with AES-GCM under the master key; it is never returned by the API.
CREATE TABLE apns_credentials (
    id                     uuid PRIMARY KEY,
    app_id                 uuid NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    environment            text NOT NULL CHECK (environment IN ('production', 'sandbox')),
    kind                   text NOT NULL CHECK (kind IN ('token', 'certificate')),
    key_id                 text,
    team_id                text,
    sealed_secret          bytea NOT NULL,
    certificate_expires_at timestamptz,
    created_at             timestamptz NOT NULL DEFAULT now(),
    updated_at             timestamptz NOT NULL DEFAULT now(),
    UNIQUE (app_id, environment),
    CHECK (kind <> 'token' OR (key_id IS NOT NULL AND team_id IS NOT NULL))
);

-- Devices. `id` is the registration id: it orders keyset pages of audiences.
-- status: 'active' devices are targeted; 'invalid' ones (APNs said the token is dead) are not,
-- until the device registers again.
CREATE TABLE devices (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    app_id         uuid NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    token          bytea NOT NULL CHECK (length(token) BETWEEN 8 AND 100),
    environment    text NOT NULL CHECK (environment IN ('production', 'sandbox')),
    topic          text NOT NULL,
    alias          text CHECK (alias IS NULL OR length(alias) BETWEEN 1 AND 128),
    locale         text,
    time_zone      text,
    status         text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'invalid')),
    registered_at  timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    invalidated_at timestamptz,
    invalid_reason text,
    -- A token registered again stays one row (and gets its old registration id back).
    UNIQUE (app_id, token)
);
-- "Everyone" audiences: active devices of an app in id order; the included columns let the
-- fan-out read its pages from the index alone.
CREATE INDEX devices_audience_all ON devices (app_id, id) INCLUDE (environment, token, topic)
    WHERE status = 'active';
-- Alias audiences and look-ups.
CREATE INDEX devices_by_alias ON devices (app_id, alias, id) WHERE alias IS NOT NULL;
-- Purging invalid tokens after a while.
CREATE INDEX devices_invalidated ON devices (invalidated_at) WHERE status = 'invalid';

-- Tags, one row per device and tag: a tag audience is a range scan of (app_id, tag) in device
-- id order, so keyset pages stay cheap for any audience size (any-of merges ranges, all-of
-- walks the rarest tag, none-of filters the "everyone" scan).
CREATE TABLE device_tags (
    app_id    uuid NOT NULL,
    tag       text NOT NULL CHECK (length(tag) BETWEEN 1 AND 64),
    device_id bigint NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
    PRIMARY KEY (app_id, tag, device_id)
);
CREATE INDEX device_tags_by_device ON device_tags (device_id);

-- Pushes. The audience, notification and options are kept as the API received them (JSON);
-- the rendered APNs payload is kept as bytes, checked against Apple's size limit on acceptance.
CREATE TABLE pushes (
    id                  uuid PRIMARY KEY,
    app_id              uuid NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    state               text NOT NULL CHECK (state IN
                            ('scheduled', 'accepted', 'fanning_out', 'sending', 'completed', 'canceled')),
    audience            jsonb NOT NULL,
    notification        jsonb NOT NULL,
    options             jsonb NOT NULL DEFAULT '{}',
    payload             bytea NOT NULL,
    push_type           text NOT NULL DEFAULT 'alert',
    priority            smallint NOT NULL DEFAULT 10 CHECK (priority IN (1, 5, 10)),
    expires_at          timestamptz,
    collapse_id         text CHECK (collapse_id IS NULL OR octet_length(collapse_id) <= 64),
    idempotency_key     text,
    scheduled_at        timestamptz,
    throttle_per_second integer CHECK (throttle_per_second IS NULL OR throttle_per_second > 0),
    finish_within_s     integer CHECK (finish_within_s IS NULL OR finish_within_s > 0),
    recall_of           uuid REFERENCES pushes (id),
    -- Fan-out progress: the last device id emitted and the number of batches produced, so a
    -- restarted center resumes after them.
    fanout_cursor       bigint NOT NULL DEFAULT 0,
    batches_emitted     integer NOT NULL DEFAULT 0,
    claimed_by          text,
    claimed_at          timestamptz,
    created_at          timestamptz NOT NULL DEFAULT now(),
    fanout_started_at   timestamptz,
    fanout_finished_at  timestamptz,
    completed_at        timestamptz,
    canceled_at         timestamptz,
    UNIQUE (app_id, idempotency_key)
);
CREATE INDEX pushes_by_app ON pushes (app_id, created_at DESC, id DESC);
CREATE INDEX pushes_due ON pushes (scheduled_at) WHERE state = 'scheduled';
CREATE INDEX pushes_unfinished ON pushes (state) WHERE state IN ('accepted', 'fanning_out', 'sending');

-- Per-push counters, updated in batches by the outcome accounting. They add up:
-- targeted = accepted + rejected + expired + canceled once the push is completed.
CREATE TABLE push_counters (
    push_id            uuid PRIMARY KEY REFERENCES pushes (id) ON DELETE CASCADE,
    targeted           bigint NOT NULL DEFAULT 0,
    accepted           bigint NOT NULL DEFAULT 0,
    rejected           bigint NOT NULL DEFAULT 0,
    expired            bigint NOT NULL DEFAULT 0,
    canceled           bigint NOT NULL DEFAULT 0,
    tokens_invalidated bigint NOT NULL DEFAULT 0,
    -- Rejections by APNs reason, for example {"BadDeviceToken": 12}.
    rejected_by_reason jsonb NOT NULL DEFAULT '{}',
    updated_at         timestamptz NOT NULL DEFAULT now()
);

-- The batches a push was cut into: a re-produced batch is recognised, a batch with no outcome
-- after a while is re-driven.
CREATE TABLE push_batches (
    push_id      uuid NOT NULL REFERENCES pushes (id) ON DELETE CASCADE,
    sequence     integer NOT NULL,
    first_device bigint NOT NULL,
    last_device  bigint NOT NULL,
    target_count integer NOT NULL,
    emitted_at   timestamptz NOT NULL DEFAULT now(),
    completed_at timestamptz,
    PRIMARY KEY (push_id, sequence)
);
CREATE INDEX push_batches_open ON push_batches (emitted_at) WHERE completed_at IS NULL;

-- Devices a push did not reach, and why.
CREATE TABLE failed_deliveries (
    push_id     uuid NOT NULL REFERENCES pushes (id) ON DELETE CASCADE,
    device_id   bigint NOT NULL,
    status      text NOT NULL CHECK (status IN ('rejected', 'expired', 'canceled')),
    reason      text,
    http_status smallint,
    attempts    smallint NOT NULL DEFAULT 1,
    failed_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (push_id, device_id)
);

-- The transactional outbox: a record written in the same transaction as the push it is about,
-- published to Kafka by a relay. A Kafka outage delays it; it never loses it.
CREATE TABLE outbox (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    topic        text NOT NULL,
    record_key   bytea,
    record_value bytea NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    published_at timestamptz
);
CREATE INDEX outbox_unpublished ON outbox (id) WHERE published_at IS NULL;

-- Recurring schedules: a push template fired at a time of day (once, daily or weekly) until
-- an end.
CREATE TABLE schedules (
    id            uuid PRIMARY KEY,
    app_id        uuid NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    name          text NOT NULL DEFAULT '',
    push_template jsonb NOT NULL,
    recurrence    text NOT NULL CHECK (recurrence IN ('once', 'daily', 'weekly')),
    -- Seconds after midnight in time_zone.
    time_of_day_s integer NOT NULL CHECK (time_of_day_s BETWEEN 0 AND 86399),
    time_zone     text NOT NULL DEFAULT 'UTC',
    -- ISO weekdays (1 = Monday) for weekly schedules.
    weekdays      smallint[] NOT NULL DEFAULT '{}',
    next_fire_at  timestamptz,
    ends_at       timestamptz,
    last_fired_at timestamptz,
    enabled       boolean NOT NULL DEFAULT true,
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX schedules_due ON schedules (next_fire_at) WHERE enabled;
