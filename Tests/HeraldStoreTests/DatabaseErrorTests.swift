import HeraldCore
import HeraldStore
import Logging
import Testing

/// What an operator sees when PostgreSQL is not where the configuration says.
@Suite struct DatabaseErrorTests {
    @Test("a wrong password names the server's reason and never the password")
    func wrongPassword() async throws {
        var settings = try await HeraldConfiguration.load().postgres
        settings.password = "not-the-password-\(Int.random(in: 1000...9999))"
        let password = settings.password
        do {
            try await HeraldDatabase.withClient(settings: settings, logger: Logger(label: "test.store.errors")) { client in
                try await MigrationRunner(client: client, logger: Logger(label: "test.store.errors")).appliedVersions()
            }
            Issue.record("connecting with a wrong password should fail")
        } catch let error as DatabaseUnreachable {
            #expect(error.description.contains("password authentication failed"))
            #expect(error.description.contains("HERALD_POSTGRES"))
            #expect(!error.description.contains(password))
        }
    }

    @Test("nothing listening on the port is reported as such")
    func nothingListening() async throws {
        var settings = try await HeraldConfiguration.load().postgres
        settings.port = 1
        do {
            try await HeraldDatabase.withClient(settings: settings, logger: Logger(label: "test.store.errors")) { client in
                try await MigrationRunner(client: client, logger: Logger(label: "test.store.errors")).appliedVersions()
            }
            Issue.record("connecting to port 1 should fail")
        } catch let error as DatabaseUnreachable {
            #expect(error.description.contains("127.0.0.1:1"))
            #expect(error.description.contains("refused"))
        }
    }
}
