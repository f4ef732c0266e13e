-- The PostgreSQL session (backend pid) through which a sender took a job batch's copy. The same
-- Kafka record handed to a second sender while the first still holds it (the senders' group
-- rebalanced and the first one's commit did not land first) is not sent while that session
-- lives: its sender is alive and finishing the batch, whose outcome accounts for both. Once the
-- session is gone (its sender died), the record is sent again at once, as before.
ALTER TABLE push_batches ADD COLUMN sending_session integer;
