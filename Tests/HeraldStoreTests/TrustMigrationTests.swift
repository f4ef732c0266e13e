import Foundation
import HeraldCore
import HeraldDomain
import PostgresNIO
import Testing

@testable import HeraldStore

@Suite("migration 0011 carries existing apps, keys and devices over")
struct TrustMigrationTests {
    @Test(
        "apps from before keep the old client rules until an operator switches them; keys keep working with every scope; new apps get the strict rules"
    )
    func existingDataCarriesOver() async throws {
        try await withEmptyDatabase { client, logger in
            let migrations = try MigrationRunner.bundledMigrations()
            try await MigrationRunner(
                client: client, logger: logger, migrations: migrations.filter { $0.version <= 10 }
            )
            .migrate()
            let appID = UUID()
            let key = "hs_" + String(repeating: "k", count: 43)
            try await client.query(
                "INSERT INTO apps (id, name, bundle_id) VALUES (\(appID), 'before', 'com.herald.before')",
                logger: logger)
            try await client.query(
                """
                INSERT INTO api_keys (id, app_id, kind, key_hash, key_prefix)
                VALUES (\(UUID()), \(appID), 'server', \(SecretHasher.hash(key).bytea), 'hs_kkkkk')
                """, logger: logger)
            try await client.query(
                """
                INSERT INTO devices (app_id, token, environment, topic, alias)
                VALUES (\(appID), \(randomToken().bytea), 'production', 'com.herald.before', 'user-1')
                """, logger: logger)

            try await MigrationRunner(client: client, logger: logger, migrations: migrations).migrate()

            let apps = AppRepository(client: client, logger: logger)
            let before = try #require(try await apps.app(id: appID))
            // An app from before also keeps taking the old form of alias signature (migration 0027).
            #expect(
                before.clientRules
                    == ClientKeyRules(
                        identityVerification: false, legacyAccess: true, allowedTags: nil, allowedAttributes: nil,
                        aliasSignaturesV1: true))
            // Loud: counted and named (the gauge, herald-api's warning at start).
            let legacy = try await apps.legacyModeApps()
            #expect(legacy.count == 1 && legacy.bundleIDs.count == 1)
            let record = try #require(try await APIKeyRepository(client: client, logger: logger).authenticate(key: key))
            #expect(record.kind == .server && record.scopes == nil, "a server key from before keeps every scope")
            let devices = try await DeviceRepository(client: client, logger: logger).devices(
                alias: "user-1", appID: appID)
            #expect(devices.count == 1)

            let switched = try await apps.update(
                id: appID, .init(identityVerification: true, legacyClientAccess: false))
            // Client tags and attributes stay open for an app from before (migration 0028).
            #expect(
                switched?.clientRules
                    == ClientKeyRules(allowedTags: nil, allowedAttributes: nil, aliasSignaturesV1: true))
            #expect(try await apps.legacyModeApps().count == 0, "switched over, no longer in legacy mode")
            let new = try await apps.create(name: "after", bundleID: "com.herald.after")
            // New apps: strict, and no client tags or attributes until their admin names some.
            #expect(
                new.clientRules
                    == ClientKeyRules(
                        identityVerification: true, legacyAccess: false, allowedTags: [], allowedAttributes: []))
        }
    }
}
