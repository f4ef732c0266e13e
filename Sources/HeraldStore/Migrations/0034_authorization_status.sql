-- The device's notification authorization as its app reports it (docs/engagement.md): Apple's
-- UNAuthorizationStatus. NULL until the app says. Segments filter on it (`authorization_status`),
-- and a push with `options.skip_unauthorized` leaves out the devices whose alerts are off
-- (`denied`), counting them skipped with the reason `not_authorized`.
ALTER TABLE devices ADD COLUMN authorization_status text
    CHECK (authorization_status IN ('authorized', 'provisional', 'ephemeral', 'denied', 'not_determined'));
