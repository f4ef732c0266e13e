import Crypto
import Foundation
import HeraldAPNs
import HeraldCore
import HeraldDomain
import HeraldStore
import Logging
import PostgresNIO
import Testing

/// APNs credentials sealed at rest: bound to their row, environment, kind and master key; master
/// keys checked at start and rotated without downtime. Each test has a database of its own.
@Suite("APNs credentials sealed under master keys")
struct CredentialSealingTests {
    static func newKey() -> String {
        Data(SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }).base64EncodedString()
    }

    static let privateKey = "-----BEGIN PRIVATE KEY-----\nMIGH...\n-----END PRIVATE KEY-----\n"

    func withCredentials(
        _ body: @Sendable (CredentialRepository, App, PostgresClient, Logger) async throws -> Void
    ) async throws {
        try await withEmptyDatabase { client, logger in
            try await MigrationRunner(client: client, logger: logger).migrate()
            let app = try await AppRepository(client: client, logger: logger).create(
                name: "Creds", bundleID: "com.example.creds")
            try await body(CredentialRepository(client: client, logger: logger), app, client, logger)
        }
    }

    @Test("stored sealed, one per environment; opens only with its key, in its own row, environment and kind")
    func sealedAndBound() async throws {
        try await withCredentials { repository, app, _, _ in
            let cipher = try CredentialCipher(masterKeyBase64: Self.newKey())
            let record = try APNsCredentialRecord.token(
                appID: app.id, environment: .sandbox, keyID: "ABC123DEFG", teamID: "TEAM123456",
                privateKeyPEM: Self.privateKey, cipher: cipher)
            #expect(record.sealedSecret != Array(Self.privateKey.utf8))
            #expect(record.sealingKeyID == cipher.sealingKeyID)
            try await repository.upsert(record)
            let stored = try await repository.credentials(appID: app.id)
            #expect(stored.count == 1 && stored[0].sealingKeyID == cipher.sealingKeyID)
            #expect(try stored[0].openSecret(with: cipher) == Array(Self.privateKey.utf8))

            var moved = stored[0]
            moved.appID = UUID()
            var relabelled = stored[0]
            relabelled.environment = .production
            var rekinded = stored[0]
            rekinded.kind = .certificate
            for altered in [moved, relabelled, rekinded] {
                #expect(throws: CredentialCipher.CannotOpen.self) { try altered.openSecret(with: cipher) }
            }
            #expect(throws: CredentialCipher.CannotOpen.self) {
                try stored[0].openSecret(with: CredentialCipher(masterKeyBase64: Self.newKey()))
            }

            // A second credential for the same environment replaces the first.
            try await repository.upsert(
                try .token(
                    appID: app.id, environment: .sandbox, keyID: "NEWKEY1234", teamID: "TEAM123456",
                    privateKeyPEM: Self.privateKey, cipher: cipher))
            #expect(try await repository.credentials(appID: app.id).map(\.keyID) == ["NEWKEY1234"])
            #expect(try await repository.delete(appID: app.id, environment: .sandbox))
            #expect(try await repository.credentials(appID: app.id).isEmpty)
        }
    }

    @Test(
        "a start with a key that did not seal the stored credentials is refused with one line; a rotation (new key, old one decrypt-only) passes and seals everything again with the new key"
    )
    func checkAndRotate() async throws {
        try await withCredentials { repository, app, client, logger in
            let oldKey = Self.newKey()
            let old = try CredentialCipher(masterKeyBase64: oldKey)
            try await repository.checkSealingKeys(old)
            try await repository.upsert(
                try .token(
                    appID: app.id, environment: .sandbox, keyID: "ABC123DEFG", teamID: "TEAM123456",
                    privateKeyPEM: Self.privateKey, cipher: old))
            try await repository.checkSealingKeys(old)

            let typo = try CredentialCipher(masterKeyBase64: Self.newKey())
            await #expect {
                try await repository.checkSealingKeys(typo)
            } throws: { error in
                "\(error)".contains(
                    "1 secret(s) (APNs credentials, identity secrets) are sealed with master key id \(old.sealingKeyID)"
                )
            }
            let before = try await repository.credentials(appID: app.id)[0]

            // Rotation: the new key seals, the old one still opens; herald-api seals again.
            let newKey = Self.newKey()
            let rotating = try CredentialCipher(masterKeyBase64: newKey, decryptOnlyBase64: [oldKey])
            try await repository.checkSealingKeys(rotating)
            #expect(try await repository.resealWithSealingKey(rotating) == 1)
            #expect(try await repository.resealWithSealingKey(rotating) == 0)
            let after = try await repository.credentials(appID: app.id)[0]
            #expect(after.sealingKeyID == rotating.sealingKeyID && after.sealedSecret != before.sealedSecret)
            #expect(after.updatedAt == before.updatedAt, "the secret did not change: senders keep their clients")

            // The old key can go now; alone, it is refused.
            let rotated = try CredentialCipher(masterKeyBase64: newKey)
            try await repository.checkSealingKeys(rotated)
            #expect(try after.openSecret(with: rotated) == Array(Self.privateKey.utf8))
            await #expect(throws: SettingError.self) { try await repository.checkSealingKeys(old) }

            // No credential stored: a key that never sealed here is still refused (a typo caught
            // before the first upload).
            try await client.query("DELETE FROM apns_credentials", logger: logger)
            await #expect {
                try await repository.checkSealingKeys(typo)
            } throws: { error in
                "\(error)".contains("is not a master key this database has used")
            }
        }
    }

    @Test("a credential sealed before key ids opens, is checked at start, and is sealed again with a key id")
    func sealedBeforeKeyIDs() async throws {
        try await withCredentials { repository, app, client, logger in
            let masterKey = Self.newKey()
            let cipher = try CredentialCipher(masterKeyBase64: masterKey)
            // As the first layout sealed it: AES-GCM bound to "<app id>/<credential id>" only.
            let id = UUID()
            let legacy = Array(
                try AES.GCM.seal(
                    Array(Self.privateKey.utf8),
                    using: SymmetricKey(data: try #require(Data(base64Encoded: masterKey))),
                    authenticating: Array("\(app.id)/\(id)".utf8)
                ).combined!)
            try await client.query(
                """
                INSERT INTO apns_credentials (id, app_id, environment, kind, key_id, team_id, sealed_secret)
                VALUES (\(id), \(app.id), 'production', 'token', 'ABC123DEFG', 'TEAM123456', \(ByteBuffer(bytes: legacy)))
                """, logger: logger)
            await #expect {
                try await repository.checkSealingKeys(CredentialCipher(masterKeyBase64: Self.newKey()))
            } throws: { error in
                "\(error)".contains("does not open the APNs credential(s) stored before key ids")
            }
            try await repository.checkSealingKeys(cipher)
            let stored = try await repository.credentials(appID: app.id)[0]
            #expect(stored.sealingKeyID == nil)
            #expect(try stored.openSecret(with: cipher) == Array(Self.privateKey.utf8))
            #expect(try await repository.resealWithSealingKey(cipher) == 1)
            let resealed = try await repository.credentials(appID: app.id)[0]
            #expect(resealed.sealingKeyID == cipher.sealingKeyID)
            #expect(try resealed.openSecret(with: cipher) == Array(Self.privateKey.utf8))
        }
    }

    @Test(
        "herald credentials reseal: seals every credential again with the new key, in one go, again and again without harm; refuses without the old key"
    )
    func resealCommand() async throws {
        let (old, new) = (Self.newKey(), Self.newKey())
        try await withEmptyDatabaseNamed { client, logger, database in
            try await MigrationRunner(client: client, logger: logger).migrate()
            let apps = AppRepository(client: client, logger: logger)
            let credentials = CredentialRepository(client: client, logger: logger)
            let oldCipher = try CredentialCipher(masterKeyBase64: old)
            for index in 0..<3 {
                let app = try await apps.create(name: "Reseal \(index)", bundleID: "com.example.reseal\(index)")
                try await credentials.upsert(
                    .token(
                        appID: app.id, environment: .production, keyID: "KEY\(index)", teamID: "TEAM",
                        privateKeyPEM: Self.privateKey, cipher: oldCipher))
            }
            func herald(_ variables: [String: String]) async throws -> (status: Int32, output: String) {
                let process = Process()
                let binaries = ProcessInfo.processInfo.environment["HERALD_BIN_DIR"] ?? ".build/debug"
                process.executableURL = URL(fileURLWithPath: binaries + "/herald")
                process.arguments = ["credentials", "reseal"]
                var environment = ProcessInfo.processInfo.environment.merging(variables) { $1 }
                environment["HERALD_POSTGRES_DATABASE"] = database
                if variables["HERALD_MASTER_KEY_DECRYPT_ONLY"] == nil {
                    environment["HERALD_MASTER_KEY_DECRYPT_ONLY"] = nil
                }
                process.environment = environment
                let output = Pipe()
                process.standardOutput = output
                process.standardError = output
                try process.run()
                while process.isRunning { try await Task.sleep(for: .milliseconds(50)) }
                return (
                    process.terminationStatus,
                    String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                )
            }
            let newCipher = try CredentialCipher(masterKeyBase64: new)
            // Without the old key: refused, nothing changed, and no key printed.
            let refused = try await herald(["HERALD_MASTER_KEY": new])
            #expect(refused.status != 0)
            #expect(!refused.output.contains(new) && !refused.output.contains(old))
            await #expect(throws: (any Error).self) { try await credentials.checkSealingKeys(newCipher) }
            // With it: all three sealed again; the new key alone opens them.
            let first = try await herald(["HERALD_MASTER_KEY": new, "HERALD_MASTER_KEY_DECRYPT_ONLY": old])
            #expect(first.status == 0, "\(first.output)")
            #expect(first.output.contains(#""resealed":3"#), "\(first.output)")
            #expect(first.output.contains(newCipher.sealingKeyID))
            try await credentials.checkSealingKeys(newCipher)
            // Again: nothing left to seal.
            let again = try await herald(["HERALD_MASTER_KEY": new, "HERALD_MASTER_KEY_DECRYPT_ONLY": old])
            #expect(again.status == 0 && again.output.contains(#""resealed":0"#), "\(again.output)")
        }
    }
}
