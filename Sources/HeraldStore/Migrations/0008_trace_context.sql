-- W3C trace context: the traceparent a push was accepted under (the caller's, or one herald-api
-- started), so the center's and the senders' logs of that push carry the same trace id; and the
-- one an outbox record is published with, as a Kafka record header.
ALTER TABLE pushes ADD COLUMN traceparent text;
ALTER TABLE outbox ADD COLUMN traceparent text;
