-- The outbox relays are woken when records are added instead of finding them at their next
-- poll (HERALD_CENTER_OUTBOX_INTERVAL_MS): a statement that inserts into the outbox notifies the
-- channel `herald_outbox`, delivered when its transaction commits (PostgreSQL sends one
-- notification per transaction for the same channel and payload). A one-device push waited half
-- the relay's interval on average for it to look; now it waits only for the commit. The poll
-- stays as the fallback for a relay whose listening connection is down.
CREATE FUNCTION outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('herald_outbox', '');
    RETURN NULL;
END
$$;

CREATE TRIGGER outbox_notify AFTER INSERT ON outbox FOR EACH STATEMENT EXECUTE FUNCTION outbox_notify();
