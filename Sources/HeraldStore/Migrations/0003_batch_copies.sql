-- Which copy of a job batch a sender is sending, so a second copy of the same batch (produced
-- again by a resumed fan-out while the first was still on its way) is not sent as well.
ALTER TABLE push_batches
    -- The Kafka record (topic/partition/offset) a sender started sending the batch from. The
    -- same record redelivered after its sender died is sent again; another record is not,
    -- unless this one started long ago (its outcome may be lost; see the sender's takeover).
    ADD COLUMN sending_copy text,
    ADD COLUMN sending_since timestamptz;
