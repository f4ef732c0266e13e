-- A push's priority class (docs/operations.md#priority-classes). Transactional pushes (a login
-- code, an order update: a list audience, sent at once) travel their own jobs topic, which
-- senders read with a consumer and a share of batches in flight of their own; campaigns are
-- everything else. Pushes accepted before this migration were all sent as campaigns.
ALTER TABLE pushes ADD COLUMN priority_class text NOT NULL DEFAULT 'campaign'
    CHECK (priority_class IN ('transactional', 'campaign'));
