import Foundation
import HeraldAPNsVocabulary
import HeraldDomain
import HeraldTiming
import Logging
import PostgresNIO

/// APNs credentials, one per app and environment, secrets sealed by `CredentialCipher`.
public struct CredentialRepository: Sendable {
    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Stores the credential, replacing the app's credential for the same environment, and
    /// appends `audit` with it.
    public func upsert(_ credential: APNsCredentialRecord, audit: AuditEntry? = nil) async throws {
        try await client.audited(
            """
            INSERT INTO apns_credentials (id, app_id, environment, kind, key_id, team_id, sealed_secret, sealing_key_id,
                                          certificate_expires_at)
            VALUES (\(credential.id), \(credential.appID), \(credential.environment.rawValue), \(credential.kind.rawValue),
                    \(credential.keyID), \(credential.teamID), \(credential.sealedSecret.bytea), \(credential.sealingKeyID),
                    \(credential.certificateExpiresAt))
            ON CONFLICT (app_id, environment) DO UPDATE SET
                id = EXCLUDED.id, kind = EXCLUDED.kind, key_id = EXCLUDED.key_id, team_id = EXCLUDED.team_id,
                sealed_secret = EXCLUDED.sealed_secret, sealing_key_id = EXCLUDED.sealing_key_id,
                certificate_expires_at = EXCLUDED.certificate_expires_at, updated_at = now()
            RETURNING id
            """, audit, logger: logger)
    }

    /// The app's credentials (at most one per environment).
    /// - Throws: ``DeadlineExceeded`` without an answer within `answerWithin`.
    public func credentials(appID: UUID, answerWithin: Duration = HeraldDatabase.answerWithin) async throws
        -> [APNsCredentialRecord]
    {
        let rows = try await client.boundedQuery(
            """
            SELECT \(unescaped: Self.columns) FROM apns_credentials WHERE app_id = \(appID) ORDER BY environment
            """, logger: logger, within: answerWithin)
        return try await Self.records(rows)
    }

    static let columns =
        "id, app_id, environment, kind, key_id, team_id, sealed_secret, sealing_key_id, certificate_expires_at, updated_at"

    /// The credentials of rows of ``columns``.
    static func records(_ rows: ReadRows) async throws -> [APNsCredentialRecord] {
        var credentials: [APNsCredentialRecord] = []
        for try await (id, appID, environment, kind, keyID, teamID, secret, sealingKeyID, expiresAt, updatedAt)
            in rows.decode((UUID, UUID, String, String, String?, String?, ByteBuffer, String?, Date?, Date).self)
        {
            guard let environment = APNsEnvironment(rawValue: environment),
                let kind = APNsCredentialKind(rawValue: kind)
            else {
                continue
            }
            credentials.append(
                APNsCredentialRecord(
                    id: id, appID: appID, environment: environment, kind: kind, keyID: keyID, teamID: teamID,
                    sealedSecret: secret.bytes, sealingKeyID: sealingKeyID, certificateExpiresAt: expiresAt,
                    updatedAt: updatedAt))
        }
        return credentials
    }

    /// Deletes the app's credential for `environment`, and appends `audit` with it. Returns
    /// whether there was one.
    @discardableResult
    public func delete(appID: UUID, environment: APNsEnvironment, audit: AuditEntry? = nil) async throws -> Bool {
        let rows = try await client.audited(
            """
            DELETE FROM apns_credentials WHERE app_id = \(appID) AND environment = \(environment.rawValue) RETURNING id
            """, audit, logger: logger)
        for try await _ in rows.decode(UUID.self) { return true }
        return false
    }
}
