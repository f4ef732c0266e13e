import Foundation
import HeraldCore
import Logging
import PostgresNIO

extension CredentialRepository {
    /// Checks at start that the configured master keys open this database's credentials, then
    /// records the sealing key's id (table `sealing_keys`).
    ///
    /// Refused: a credential sealed with a key id none of the configured keys has; credentials
    /// sealed before secrets carried a key id that none of the keys opens; and, with no
    /// credentials stored, keys none of which has sealed here before (a typo, caught before the
    /// first upload).
    /// - Throws: ``SettingError`` with one line that says which key is missing; database errors.
    public func checkSealingKeys(_ cipher: CredentialCipher) async throws {
        let usage = try await client.boundedQuery(
            """
            SELECT sealing_key_id, count(*) FROM (
                SELECT sealing_key_id FROM apns_credentials
                UNION ALL SELECT sealing_key_id FROM app_identity_secrets
                UNION ALL SELECT previous_sealing_key_id FROM app_identity_secrets WHERE previous_valid_until > now()
            ) sealed GROUP BY sealing_key_id
            """, logger: logger)
        var sealedBy: [String?: Int] = [:]
        for try await (keyID, count) in usage.decode((String?, Int).self) { sealedBy[keyID] = count }
        let configured =
            "HERALD_MASTER_KEY (key id \(cipher.sealingKeyID))"
            + (cipher.keyIDs.count > 1
                ? " and HERALD_MASTER_KEY_DECRYPT_ONLY (\(cipher.keyIDs.dropFirst().joined(separator: ", ")))" : "")
        for case (let keyID?, let count) in sealedBy.sorted(by: { ($0.key ?? "") < ($1.key ?? "") })
        where !cipher.keyIDs.contains(keyID) {
            throw SettingError(
                "\(count) secret(s) (APNs credentials, identity secrets) are sealed with master key id \(keyID), which neither \(configured) is: "
                    + "set the key they were sealed with (as HERALD_MASTER_KEY_DECRYPT_ONLY while rotating)")
        }
        if sealedBy[nil] != nil {
            let rows = try await client.boundedQuery(
                "SELECT \(unescaped: Self.columns) FROM apns_credentials WHERE sealing_key_id IS NULL LIMIT 1",
                logger: logger)
            if let legacy = try await Self.records(rows).first, (try? legacy.openSecret(with: cipher)) == nil {
                throw SettingError(
                    "\(configured) does not open the APNs credential(s) stored before key ids: set the master key they were stored with"
                )
            }
        }
        if sealedBy.isEmpty {
            let known = try await client.boundedQuery("SELECT key_id FROM sealing_keys ORDER BY key_id", logger: logger)
            var knownIDs: [String] = []
            for try await keyID in known.decode(String.self) { knownIDs.append(keyID) }
            if !knownIDs.isEmpty, !knownIDs.contains(where: cipher.keyIDs.contains) {
                throw SettingError(
                    "\(configured) is not a master key this database has used (\(knownIDs.joined(separator: ", "))): "
                        + "check HERALD_MASTER_KEY for a typo; to start over with a new key, set the old one as HERALD_MASTER_KEY_DECRYPT_ONLY once"
                )
            }
        }
        try await client.boundedQuery(
            "INSERT INTO sealing_keys (key_id) VALUES (\(cipher.sealingKeyID)) ON CONFLICT (key_id) DO NOTHING",
            logger: logger)
    }

    /// Seals again, with the cipher's sealing key, every credential (and every app's identity
    /// secret) sealed with another key (or before key ids): the second step of a master key rotation (docs/operations.md). A row's
    /// `updated_at` stays: its secret did not change, so senders keep their clients.
    /// - Returns: how many credentials and identity secrets were sealed again.
    /// - Throws: `CredentialCipher.CannotOpen` for a credential none of the keys opens (run
    ///   ``checkSealingKeys(_:)`` first); database errors.
    @discardableResult
    public func resealWithSealingKey(_ cipher: CredentialCipher) async throws -> Int {
        let logger = logger
        return try await client.transaction(logger: logger) { connection in
            let rows = try await connection.run(
                """
                SELECT \(unescaped: Self.columns) FROM apns_credentials
                WHERE sealing_key_id IS DISTINCT FROM \(cipher.sealingKeyID) FOR UPDATE
                """, logger: logger)
            let stale = try await Self.records(rows)
            for var record in stale {
                try record.seal(try record.openSecret(with: cipher), with: cipher)
                try await connection.run(
                    """
                    UPDATE apns_credentials SET sealed_secret = \(record.sealedSecret.bytea),
                        sealing_key_id = \(record.sealingKeyID) WHERE id = \(record.id)
                    """, logger: logger)
            }
            let identitySecrets = try await IdentitySecretRepository(client: client, logger: logger)
                .resealWithSealingKey(cipher, connection: connection)
            return stale.count + identitySecrets
        }
    }
}
