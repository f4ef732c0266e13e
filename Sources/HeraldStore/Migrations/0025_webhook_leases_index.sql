-- The webhook claim counts each endpoint's leased deliveries (its max_concurrency) on every
-- claim: an index of the pending ones, so the count does not read an endpoint's delivered history.
CREATE INDEX webhook_deliveries_leased ON webhook_deliveries (endpoint_id, leased_until) WHERE state = 'pending';
