import Foundation
import HeraldCore
import HeraldDomain
import Logging
import PostgresNIO

/// Each app's identity secret: the key under which the app's back-end signs an alias (HMAC-SHA256)
/// so that the app's client key may bind it to a device. Sealed under the master key, like APNs
/// credentials; after a rotation the previous secret keeps working for a grace period.
public struct IdentitySecretRepository: Sendable {
    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// The secrets that verify an alias signature of `appID` now: the current one and, within its
    /// grace period, the previous one. Empty when the app has none.
    /// - Throws: `CredentialCipher.CannotOpen` for a secret the cipher cannot open; database errors.
    public func secrets(appID: UUID, cipher: CredentialCipher) async throws -> [[UInt8]] {
        let rows = try await client.boundedQuery(
            """
            SELECT sealed_secret, sealing_key_id,
                   CASE WHEN previous_valid_until > now() THEN previous_sealed_secret END, previous_sealing_key_id
            FROM app_identity_secrets WHERE app_id = \(appID)
            """, logger: logger)
        var secrets: [[UInt8]] = []
        for try await (sealed, keyID, previous, previousKeyID) in rows.decode(
            (ByteBuffer, String, ByteBuffer?, String?).self)
        {
            secrets.append(try Self.open(sealed.bytes, keyID: keyID, appID: appID, cipher: cipher))
            if let previous, let previousKeyID {
                secrets.append(try Self.open(previous.bytes, keyID: previousKeyID, appID: appID, cipher: cipher))
            }
        }
        return secrets
    }

    /// Makes `secret` the app's identity secret; the one it replaces keeps working for
    /// `graceSeconds` (0: it stops at once). `audit` is appended with it.
    public func replace(
        appID: UUID, secret: String, graceSeconds: Int, cipher: CredentialCipher, audit: AuditEntry? = nil
    ) async throws {
        let (sealed, keyID) = try cipher.seal(Array(secret.utf8)) {
            Self.associatedData(appID: appID, sealingKeyID: $0)
        }
        try await client.audited(
            """
            INSERT INTO app_identity_secrets AS s (app_id, sealed_secret, sealing_key_id)
            VALUES (\(appID), \(sealed.bytea), \(keyID))
            ON CONFLICT (app_id) DO UPDATE SET
                previous_sealed_secret = s.sealed_secret, previous_sealing_key_id = s.sealing_key_id,
                previous_valid_until = now() + make_interval(secs => \(Double(graceSeconds))),
                sealed_secret = excluded.sealed_secret, sealing_key_id = excluded.sealing_key_id, created_at = now()
            RETURNING app_id
            """, audit, logger: logger)
    }

    /// Seals again, with the cipher's sealing key, every identity secret sealed with another (the
    /// second step of a master key rotation, with ``CredentialRepository/resealWithSealingKey(_:)``).
    /// - Returns: how many secrets were sealed again.
    func resealWithSealingKey(_ cipher: CredentialCipher, connection: PostgresConnection) async throws -> Int {
        let rows = try await connection.run(
            """
            SELECT app_id, sealed_secret, sealing_key_id, previous_sealed_secret, previous_sealing_key_id
            FROM app_identity_secrets
            WHERE sealing_key_id <> \(cipher.sealingKeyID) OR previous_sealing_key_id <> \(cipher.sealingKeyID)
            FOR UPDATE
            """, logger: logger)
        var stale: [(UUID, [UInt8], String, [UInt8]?, String?)] = []
        for try await (appID, sealed, keyID, previous, previousKeyID) in rows.decode(
            (UUID, ByteBuffer, String, ByteBuffer?, String?).self)
        {
            stale.append((appID, sealed.bytes, keyID, previous?.bytes, previousKeyID))
        }
        for (appID, sealed, keyID, previous, previousKeyID) in stale {
            let current = try Self.reseal(sealed, keyID: keyID, appID: appID, cipher: cipher)
            let earlier = try previous.map { previous in
                try Self.reseal(previous, keyID: previousKeyID ?? keyID, appID: appID, cipher: cipher)
            }
            try await connection.run(
                """
                UPDATE app_identity_secrets SET sealed_secret = \(current.bytea), sealing_key_id = \(cipher.sealingKeyID),
                    previous_sealed_secret = \(earlier?.bytea),
                    previous_sealing_key_id = CASE WHEN previous_sealed_secret IS NULL THEN NULL ELSE \(cipher.sealingKeyID) END
                WHERE app_id = \(appID)
                """, logger: logger)
        }
        return stale.count
    }

    private static func reseal(_ sealed: [UInt8], keyID: String, appID: UUID, cipher: CredentialCipher) throws
        -> [UInt8]
    {
        let secret = try open(sealed, keyID: keyID, appID: appID, cipher: cipher)
        return try cipher.seal(secret) { associatedData(appID: appID, sealingKeyID: $0) }.sealed
    }

    private static func open(_ sealed: [UInt8], keyID: String, appID: UUID, cipher: CredentialCipher)
        throws(CredentialCipher.CannotOpen) -> [UInt8]
    {
        try cipher.open(sealed, keyID: keyID, associatedData: associatedData(appID: appID, sealingKeyID: keyID))
    }

    static func associatedData(appID: UUID, sealingKeyID: String) -> [UInt8] {
        Array("herald-identity-secret/v1 app=\(appID) sealing-key=\(sealingKeyID)".utf8)
    }
}
