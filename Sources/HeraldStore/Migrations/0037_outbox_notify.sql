-- The outbox relays are woken when records are added instead of finding them at their next
-- poll (HERALD_CENTER_OUTBOX_INTERVAL_MS): a statement that inserts outbox rows notifies the
-- channel `herald_outbox`, delivered when its transaction commits (PostgreSQL sends one
-- notification per transaction for the same channel and payload). A one-device push waited half
-- the relay's interval on average for it to look; now it waits only for the commit. The poll
-- stays as the fallback for a relay whose listening connection is down. A statement that inserts
-- nothing (an idempotent replay of a push) does not notify: a transaction that notifies holds
-- PostgreSQL's notification lock through its commit, so only the ones with something to publish
-- take it (docs/operations.md).
CREATE FUNCTION herald_notify_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT FROM added) THEN
        PERFORM pg_notify('herald_outbox', '');
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER herald_notify_outbox AFTER INSERT ON outbox REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION herald_notify_outbox();
