import HeraldCore
import HeraldStore
import Logging
import Testing

/// What an operator sees when PostgreSQL is not where the configuration says.
@Suite struct DatabaseErrorTests {
    /// The error `withClient` throws for `settings` (the test fails if it connects).
    func connectionError(_ settings: PostgresSettings) async throws -> DatabaseUnreachable? {
        let logger = Logger(label: "test.store.errors")
        do {
            try await HeraldDatabase.withClient(settings: settings, logger: logger) { client in
                try await MigrationRunner(client: client, logger: logger).appliedVersions()
            }
            Issue.record("connecting to \(settings.host):\(settings.port) should fail")
            return nil
        } catch let error as DatabaseUnreachable {
            return error
        }
    }

    @Test("a wrong password names the server's reason and never the password")
    func wrongPassword() async throws {
        var settings = try await HeraldConfiguration.load().postgres
        settings.password = "not-the-password-\(Int.random(in: 1000...9999))"
        let error = try #require(try await connectionError(settings))
        #expect(error.description.contains("password authentication failed"))
        #expect(error.description.contains("HERALD_POSTGRES"))
        #expect(!error.description.contains(settings.password))
    }

    @Test("nothing listening on the port is reported as such")
    func nothingListening() async throws {
        var settings = try await HeraldConfiguration.load().postgres
        settings.port = 1
        let error = try #require(try await connectionError(settings))
        #expect(error.description.contains("127.0.0.1:1"))
        #expect(error.description.contains("refused"))
    }

    @Test("a failed statement is logged with the server's SQLSTATE and message, never the statement's values")
    func failedStatementForLogs() async throws {
        try await withMigratedStore { client, logger in
            let secret = "value-\(Int.random(in: 1000...9999))"
            do {
                try await client.query("SELECT \(secret)::text, 1 / 0", logger: logger)
                Issue.record("dividing by zero should fail")
            } catch {
                let text = HeraldDatabase.describe(error)
                #expect(text == "PostgreSQL 22012: division by zero")
                #expect(!text.contains(secret))
            }
        }
    }
}
