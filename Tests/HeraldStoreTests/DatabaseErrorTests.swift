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
}
