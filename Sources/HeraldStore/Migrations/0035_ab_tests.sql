-- A/B tests (docs/engagement.md#ab-tests): a push with variants sends each device one of several
-- notifications, picked by a hash of (push, device), and may hold a share of its audience out.
--
-- `split` is the variants' names and weights and the holdout share; `variant_payloads` each
-- variant's APNs payload in the same order (`payload` holds the first). Both NULL for every push
-- without variants.
ALTER TABLE pushes ADD COLUMN split jsonb, ADD COLUMN variant_payloads bytea[];

-- A push with variants cuts a batch per variant: its job record carries that variant's payload,
-- and its outcome counts toward that variant. NULL for every other push.
ALTER TABLE push_batches ADD COLUMN variant smallint;

-- Each variant's counters beside the push's: targeted when its batches are recorded, outcomes as
-- they are counted. The variants' rows and the holdout (the push's `skipped_by_reason.holdout`)
-- add up to the push's counters; only the devices a canceled push never reached belong to none.
CREATE TABLE push_variant_counters (
    push_id          uuid NOT NULL REFERENCES pushes (id) ON DELETE CASCADE,
    variant          smallint NOT NULL,
    targeted         bigint NOT NULL DEFAULT 0,
    accepted         bigint NOT NULL DEFAULT 0,
    delivered_online bigint NOT NULL DEFAULT 0,
    rejected         bigint NOT NULL DEFAULT 0,
    expired          bigint NOT NULL DEFAULT 0,
    canceled         bigint NOT NULL DEFAULT 0,
    skipped          bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (push_id, variant)
);

-- Engagement counts per variant (-1 for a push without variants), so an A/B test compares open
-- rates: the key grows by the variant.
ALTER TABLE push_engagement_counts ADD COLUMN variant smallint NOT NULL DEFAULT -1;
ALTER TABLE push_engagement_counts DROP CONSTRAINT push_engagement_counts_pkey;
ALTER TABLE push_engagement_counts ADD PRIMARY KEY (push_id, variant, shard);
