-- A completed batch keeps the devices APNs accepted (for a recall): about 4 kB a batch, written
-- once per batch of up to 500 notifications. PostgreSQL's default compression (pglz) of that
-- array cost about 2% of the whole machine under `make bench-e2e` (issue 22); lz4 does the same
-- work several times faster. Only values written from now on use it; older ones stay readable.
--
-- lz4 needs PostgreSQL 14 or later built with it (Debian's and the official images are). On a
-- server without it the column keeps pglz: the migration succeeds either way.
DO $$
BEGIN
    ALTER TABLE push_batches ALTER COLUMN accepted_device_ids SET COMPRESSION lz4;
EXCEPTION
    WHEN feature_not_supported OR syntax_error OR invalid_parameter_value THEN
        RAISE NOTICE 'lz4 is not available here: push_batches.accepted_device_ids keeps pglz';
END
$$;
