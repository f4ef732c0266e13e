import Foundation
import HeraldCore
import HeraldTiming
import Logging
import PostgresNIO

/// The operations console's signed-in sessions (`console_sessions`). The browser's session token
/// is never stored, only its SHA-256; a session ends when it has been idle too long, when it is
/// too old, on sign-out, or with the key it was opened with.
public struct ConsoleSessionRepository: Sendable {
    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Whom a session belongs to.
    public enum Owner: Sendable, Equatable {
        /// An app's key.
        case key(UUID)
        /// The global admin token whose digest (SHA-256 of its SHA-256) this is.
        case admin(digest: [UInt8])
    }

    /// A live session.
    public struct Session: Sendable, Equatable {
        public var owner: Owner
        /// The token every form of the session carries.
        public var csrfToken: String
    }

    /// Opens a session for `owner` under the browser token `token`.
    public func open(token: String, owner: Owner, csrfToken: String) async throws {
        let (keyID, digest): (UUID?, [UInt8]?) =
            switch owner {
            case .key(let id): (id, nil)
            case .admin(let digest): (nil, digest)
            }
        try await client.boundedQuery(
            """
            INSERT INTO console_sessions (token_hash, key_id, admin_digest, csrf_token)
            VALUES (\(SecretHasher.hash(token).bytea), \(keyID), \(digest?.bytea), \(csrfToken))
            """, logger: logger)
    }

    /// The session of `token` if it was used within `idle` and opened within `lifetime`, marked
    /// used now; nil otherwise.
    public func resume(token: String, idle: Duration, lifetime: Duration) async throws -> Session? {
        let rows = try await client.boundedQuery(
            """
            UPDATE console_sessions SET last_seen_at = now()
            WHERE token_hash = \(SecretHasher.hash(token).bytea)
              AND last_seen_at > now() - make_interval(secs => \(idle.fractionalSeconds))
              AND created_at > now() - make_interval(secs => \(lifetime.fractionalSeconds))
            RETURNING key_id, admin_digest, csrf_token
            """, logger: logger)
        for try await (keyID, digest, csrf) in rows.decode((UUID?, ByteBuffer?, String).self) {
            if let keyID { return Session(owner: .key(keyID), csrfToken: csrf) }
            if let digest { return Session(owner: .admin(digest: digest.bytes), csrfToken: csrf) }
        }
        return nil
    }

    /// Ends the session of `token` (signing out).
    public func close(token: String) async throws {
        try await client.boundedQuery(
            "DELETE FROM console_sessions WHERE token_hash = \(SecretHasher.hash(token).bytea)", logger: logger)
    }

    /// Deletes sessions idle for more than `idle` or older than `lifetime`.
    /// - Returns: how many were deleted.
    @discardableResult
    public func deleteExpired(idle: Duration, lifetime: Duration) async throws -> Int {
        let rows = try await client.boundedQuery(
            """
            WITH gone AS (
                DELETE FROM console_sessions
                WHERE last_seen_at <= now() - make_interval(secs => \(idle.fractionalSeconds))
                   OR created_at <= now() - make_interval(secs => \(lifetime.fractionalSeconds))
                RETURNING 1)
            SELECT count(*) FROM gone
            """, logger: logger)
        for try await count in rows.decode(Int.self) { return count }
        return 0
    }
}
