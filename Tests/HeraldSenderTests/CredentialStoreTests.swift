import Foundation
import HeraldAPNs
import HeraldCore
import HeraldSender
import HeraldStore
import Testing

/// The credential store against the real PostgreSQL server, with a pool of its own that the test
/// stops as if the database went away.
@Suite("herald-sender credentials while the database is away", .serialized)
struct CredentialStoreTests {
    @Test(
        "the credential loaded before goes on while the database cannot be read; an app never loaded waits (CredentialUnavailable), it is not rejected"
    )
    func theLoadedCredentialOutlivesTheDatabase() async throws {
        try await withWorkerEnvironment(deliverable: 1) { environment in
            let pool = try HeraldDatabase.makeClient(
                settings: environment.configuration.postgres, logger: environment.logger)
            let poolRun = Task { await pool.run() }
            let store = CredentialStore(
                repository: CredentialRepository(client: pool, logger: environment.logger), cipher: environment.cipher,
                endpoints: SenderEndpoints(), clientConfiguration: APNsClientConfiguration(),
                refreshInterval: .zero, lookupWithin: .seconds(5), logger: environment.logger)
            let loaded = try await store.client(appID: environment.appID, environment: .sandbox)
            // With the database readable, a missing credential is a permanent answer.
            await #expect(throws: MissingCredential.self) {
                try await store.client(appID: environment.appID, environment: .production)
            }

            poolRun.cancel()
            await poolRun.value
            // Every look-up now fails (refreshInterval zero: each call tries the database).
            let during = try await store.client(appID: environment.appID, environment: .sandbox)
            #expect(during === loaded)
            await #expect(throws: CredentialUnavailable.self) {
                try await store.client(appID: environment.appID, environment: .production)
            }
            await #expect(throws: CredentialUnavailable.self) {
                try await store.client(appID: UUID(), environment: .sandbox)
            }
        }
    }
}
