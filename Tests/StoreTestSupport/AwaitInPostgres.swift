import Logging
import PostgresNIO

/// Returns once `condition`, a SQL boolean expression over PostgreSQL's own state (`pg_locks`,
/// `pg_stat_activity`, a table), holds. PostgreSQL itself waits for it, in one statement on one
/// of `client`'s connections, looking again every 10 ms; the statement fails with the condition
/// in its message when it has not held within `within`. For tests that must know what another
/// session is doing (waiting on a lock, aborted by a timeout) before they go on.
public func awaitInPostgres(
    _ condition: String, client: PostgresClient, logger: Logger, within: Duration = .seconds(60)
) async throws {
    let limit = Double(within.components.seconds) + Double(within.components.attoseconds) / 1e18
    // Statistics views are read once per transaction unless their snapshot is cleared.
    let body = """
        DO $herald$
        DECLARE
            deadline timestamptz := clock_timestamp() + make_interval(secs => \(limit));
        BEGIN
            LOOP
                PERFORM pg_stat_clear_snapshot();
                EXIT WHEN (\(condition));
                IF clock_timestamp() > deadline THEN
                    RAISE EXCEPTION 'this did not hold within % s: %', \(limit), $cond$\(condition)$cond$;
                END IF;
                PERFORM pg_sleep(0.01);
            END LOOP;
        END
        $herald$
        """
    try await client.query(PostgresQuery(unsafeSQL: body), logger: logger)
}
