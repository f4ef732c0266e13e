import Foundation
import HeraldCore
import Logging
import PostgresNIO
import Synchronization
import Testing

@testable import HeraldStore

/// How Herald reads a statement's rows (`boundedQuery`, `PostgresConnection.run`): PostgreSQL ending a
/// connection in the middle of a result is an error for that read, not the end of the process.
@Suite struct ReadRowsTests {
    /// Runs `statement` (which must name `marker` as a column alias) through `boundedQuery` and
    /// terminates its backend once pg_stat_activity shows it in `waitEvent` (any wait when nil).
    /// - Returns: whether the backend was found and terminated, and how the read ended.
    func cutOff(
        _ statement: (String) -> PostgresQuery, waitEvent: String?, client: PostgresClient, logger: Logger
    ) async throws -> (terminated: Bool, read: Result<[PostgresRow], any Error>) {
        let marker = "read_rows_cut_\(Int.random(in: 100_000...999_999))"
        let query = statement(marker)
        let ended = Mutex(false)
        let reading = Task {
            defer { ended.withLock { $0 = true } }
            return try await client.boundedQuery(query, logger: logger, within: .seconds(20)).rows
        }
        var terminated = false
        for _ in 0..<100 where !terminated && !ended.withLock({ $0 }) {
            try await Task.sleep(for: .milliseconds(100))
            // Like the reads, this one may be handed a connection an earlier termination closed,
            // or (postgres-nio 1.33.2, docs/limits.md) wait for one without end.
            guard
                let rows = try? await client.boundedQuery(
                    """
                    SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                    WHERE query LIKE '%AS ' || \(marker) || ',%' AND pid <> pg_backend_pid()
                      AND (\(waitEvent)::text IS NULL OR wait_event = \(waitEvent))
                    """, logger: logger, within: .seconds(5))
            else { continue }
            terminated = try rows.rows.contains { try $0.decode(Bool.self) }
        }
        return (terminated, await reading.result)
    }

    /// A small read after the cut ones; the first tries may be handed connections the
    /// terminations closed (postgres-nio's pool learns of a closed connection when it is used).
    func readsAgain(_ client: PostgresClient, logger: Logger) async throws -> [Int] {
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try await client.boundedQuery("SELECT g FROM generate_series(1, 3) g", logger: logger).rows
                    .map { try $0.decode(Int.self) }
            } catch  where attempt < 5 {}
        }
    }

    @Test("a result cut off between two parts throws, and the pool reads the next one")
    func cutOffBetweenParts() async throws {
        try await withMigratedStore { client, logger in
            // Half the rows go out at once; then the statement sleeps, so the connection ends with
            // a result begun and unfinished.
            let (terminated, read) = try await cutOff(
                { marker in
                    """
                    SELECT g, repeat('x', 100) AS \(unescaped: marker), CASE WHEN g = 50000 THEN pg_sleep(60) END
                    FROM (SELECT generate_series(1, 100000) AS g) AS series
                    """
                }, waitEvent: "PgSleep", client: client, logger: logger)
            #expect(terminated, "the sleeping statement was never seen in pg_stat_activity")
            #expect(throws: (any Error).self) { try read.get() }
            #expect(try await readsAgain(client, logger: logger) == [1, 2, 3])
        }
    }

    /// What ended a center in the end-to-end database-outage test: the server closing the
    /// connection while rows were still arriving. Through postgres-nio's own row stream that
    /// stops the process on a precondition whenever the rows already handed over are unconsumed
    /// at that moment (see `PostgresConnection.run`): with a consumer slower than the network, every time; with
    /// a quick one, now and then (these two tests ended the process in some runs against the
    /// row stream). Repeated, so the moment has chances to come.
    @Test("a result cut off while its rows stream in throws, each of five times")
    func cutOffWhileStreaming() async throws {
        try await withMigratedStore { client, logger in
            var cut = 0
            var attempts = 0
            while cut < 5, attempts < 20 {
                attempts += 1
                let (terminated, read) = try await cutOff(
                    { marker in
                        // As fast as PostgreSQL sends them (about 110 MB unless cut off), produced
                        // row by row: generate_series in the select list streams (ProjectSet), in
                        // FROM it would first be written out whole to a temporary file.
                        """
                        SELECT g, repeat('x', 100) AS \(unescaped: marker), 1
                        FROM (SELECT generate_series(1, 1000000) AS g) AS series
                        """
                    }, waitEvent: nil, client: client, logger: logger)
                // The pool may hand the next statement a connection the last termination closed:
                // that read fails before it starts, and is tried again.
                guard terminated else { continue }
                cut += 1
                #expect(throws: (any Error).self) { try read.get() }
            }
            #expect(cut == 5, "only \(cut) of \(attempts) statements were seen running and terminated")
            #expect(try await readsAgain(client, logger: logger) == [1, 2, 3])
        }
    }
}
