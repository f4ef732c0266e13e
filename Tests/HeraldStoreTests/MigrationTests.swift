import Foundation
import HeraldCore
import PostgresNIO
import StoreTestSupport
import Testing

@testable import HeraldStore

@Suite struct MigrationTests {
    @Test("migrations apply to an empty database, and a second run changes nothing")
    func applyThenNoOp() async throws {
        try await withEmptyDatabase { client, logger in
            let runner = try MigrationRunner(client: client, logger: logger)
            let bundled = try MigrationRunner.bundledMigrations().map(\.version)
            #expect(!bundled.isEmpty)

            let first = try await runner.migrate()
            #expect(first == bundled)
            let second = try await runner.migrate()
            #expect(second.isEmpty)
            #expect(try await runner.appliedVersions() == bundled)

            // The tables are there.
            let rows = try await client.query(
                """
                SELECT count(*) FROM information_schema.tables
                WHERE table_schema = 'public' AND table_name = ANY(\(["apps", "api_keys", "apns_credentials", "devices",
                    "device_tags", "pushes", "push_counters", "push_batches", "failed_deliveries", "outbox", "schedules"]))
                """, logger: logger)
            for try await count in rows.decode(Int64.self) { #expect(count == 11) }
        }
    }

    @Test(
        "with a pool's statement timeout (herald-api's): PostgreSQL stops a longer statement; migrations waiting longer than it on another process still apply, and the connection goes back to the pool with the timeout"
    )
    func statementTimeout() async throws {
        try await withEmptyDatabaseNamed { plain, logger, name in
            var settings = try await HeraldConfiguration.load().postgres
            settings.database = name
            settings.statementTimeout = .milliseconds(300)
            // One connection: the one the migration used is the one asked afterwards.
            settings.maximumConnections = 1
            try await HeraldDatabase.withClient(settings: settings, logger: logger) { bounded in
                await #expect {
                    for try await _ in try await bounded.query("SELECT pg_sleep(2)", logger: logger) {}
                } throws: { ($0 as? PSQLError)?.serverInfo?[.sqlState] == "57014" }

                // Another process holds the migrations' lock until the migration has waited for it
                // three times the timeout, by PostgreSQL's own clock: a wait the timeout would cut.
                try await plain.withConnection { holder in
                    try await holder.query(
                        "SELECT pg_advisory_lock(\(MigrationRunner.advisoryLockKey))", logger: logger)
                    async let migrated = MigrationRunner(client: bounded, logger: logger).migrate()
                    try await awaitInPostgres(
                        """
                        EXISTS (SELECT 1 FROM pg_locks AS lock JOIN pg_stat_activity AS activity ON activity.pid = lock.pid
                                WHERE lock.locktype = 'advisory' AND NOT lock.granted
                                  AND activity.datname = current_database()
                                  AND clock_timestamp() - activity.query_start >= interval '900 milliseconds')
                        """, client: plain, logger: logger)
                    try await holder.query(
                        "SELECT pg_advisory_unlock(\(MigrationRunner.advisoryLockKey))", logger: logger)
                    #expect(try await !migrated.isEmpty)
                }
                for try await setting in try await bounded.query("SHOW statement_timeout", logger: logger).decode(
                    String.self)
                {
                    #expect(setting == "300ms")
                }
            }
        }
    }

    @Test("processes migrating at once apply each migration once")
    func concurrentRunners() async throws {
        try await withEmptyDatabase { client, logger in
            let applied = try await withThrowingTaskGroup(of: [Int].self) { group in
                for _ in 0..<4 {
                    group.addTask { try await MigrationRunner(client: client, logger: logger).migrate() }
                }
                var all: [[Int]] = []
                for try await versions in group { all.append(versions) }
                return all
            }
            // Exactly one runner applied the migrations; the others found them applied.
            #expect(applied.filter { !$0.isEmpty }.count == 1)
            #expect(applied.flatMap { $0 } == (try MigrationRunner.bundledMigrations().map(\.version)))
        }
    }

    @Test("a failing migration leaves no trace and is not recorded")
    func failingMigrationRollsBack() async throws {
        try await withEmptyDatabase { client, logger in
            let broken = Migration(
                version: 1, name: "broken", sql: "CREATE TABLE half (id int); SELECT * FROM no_such_table;")
            let runner = try MigrationRunner(client: client, logger: logger, migrations: [broken])
            await #expect(throws: (any Error).self) { try await runner.migrate() }
            #expect(try await runner.appliedVersions().isEmpty)
            let rows = try await client.query("SELECT to_regclass('half') IS NULL", logger: logger)
            for try await missing in rows.decode(Bool.self) { #expect(missing) }
        }
    }

    @Test("SQL is cut at top-level semicolons only")
    func statementSplitting() {
        let sql = """
            -- a comment; with a semicolon
            CREATE TABLE a (t text DEFAULT 'x;y');
            CREATE FUNCTION f() RETURNS int AS $body$ BEGIN RETURN 1; END; $body$ LANGUAGE plpgsql;
            SELECT 1
            """
        let statements = SQLStatementSplitter.split(sql)
        #expect(statements.count == 3)
        #expect(statements[0] == "CREATE TABLE a (t text DEFAULT 'x;y')")
        #expect(statements[1].hasSuffix("LANGUAGE plpgsql"))
        #expect(statements[1].contains("RETURN 1; END;"))
        #expect(statements[2] == "SELECT 1")
    }
}
