-- One recall per push, held by the database instead of by an idempotency key in the tenant's
-- own namespace (a push of the tenant's that happened to use 'herald-recall:<id>' took the
-- recall's place). Recalls are stored without an idempotency key.
CREATE UNIQUE INDEX pushes_one_recall_per_push ON pushes (recall_of) WHERE recall_of IS NOT NULL;
