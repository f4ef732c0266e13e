import Crypto
import Foundation
import HeraldAPNs
import HeraldCore
import HeraldSender
import HeraldStore
import ServiceLifecycle
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

    @Test(
        "a client no batch uses is closed after the idle timeout, and no more than the bound run at once: the store shrinks back"
    )
    func idleAndSurplusClientsClose() async throws {
        try await withWorkerEnvironment(deliverable: 1) { environment in
            var apps = [environment.appID]
            for index in 0..<2 {
                let app = try await AppRepository(client: environment.database, logger: environment.logger).create(
                    name: "idle \(index)", bundleID: "\(environment.bundleID).idle\(index)")
                try await CredentialRepository(client: environment.database, logger: environment.logger).upsert(
                    .token(
                        appID: app.id, environment: .sandbox, keyID: "IDLEKEY00\(index)", teamID: "WORKERTEAM",
                        privateKeyPEM: P256.Signing.PrivateKey().pemRepresentation, cipher: environment.cipher))
                apps.append(app.id)
            }
            var endpoints = SenderEndpoints()
            endpoints.sandbox = APNsEndpoint(
                host: "localhost", port: environment.simulator.port,
                trustedCertificates: environment.simulator.identity.certificateChain)
            let store = CredentialStore(
                repository: CredentialRepository(client: environment.database, logger: environment.logger),
                cipher: environment.cipher, endpoints: endpoints, clientConfiguration: APNsClientConfiguration(),
                // Long enough that making the three clients under a loaded machine's `make test` (a
                // database read and a client each) never outlasts it: 400 ms once did.
                retirementDelay: .zero, idleTimeout: .seconds(3), maximumClients: 2, logger: environment.logger)
            let services = ServiceGroup(
                configuration: .init(services: [store], gracefulShutdownSignals: [], logger: environment.logger))
            let running = Task { try await services.run() }

            for app in apps { _ = try await store.client(appID: app, environment: .sandbox) }
            #expect(store.clientCount == 2, "the third app's client pushed out the least recently used")
            #expect(store.clientsEvicted == 1)
            for _ in 0..<300 where store.clientCount > 0 { try await Task.sleep(for: .milliseconds(50)) }
            #expect(store.clientCount == 0, "idle clients are closed")
            #expect(store.clientsEvicted == 3)
            _ = try await store.client(appID: apps[0], environment: .sandbox)
            #expect(store.clientCount == 1, "an app that sends again gets a new client")

            await services.triggerGracefulShutdown()
            try await running.value
        }
    }
}
