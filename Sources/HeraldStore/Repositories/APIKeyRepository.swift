import Foundation
import HeraldCore
import HeraldDomain
import Logging
import PostgresNIO

/// API keys, stored as SHA-256 hashes.
public struct APIKeyRepository: Sendable {
    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Stores the hash of `key` (the caller shows `key` once and forgets it).
    /// - Parameter scopes: a server key's scopes (`nil`: every scope).
    public func create(
        appID: UUID, kind: APIKeyKind, key: String, name: String = "", scopes: [APIKeyScope]? = nil, id: UUID = UUID()
    ) async throws -> APIKeyRecord {
        try await create(appID: appID, kind: kind, key: key, name: name, scopes: scopes, id: id, liveAtMost: .max)!
    }

    /// The same, unless the app has `liveAtMost` live keys already (revoked ones, and rotated
    /// ones past their grace, do not count): then nil, and nothing is stored. The app's row is
    /// locked for the count, so two keys created at once cannot both take the last place.
    /// `audit` is appended with a key stored.
    public func create(
        appID: UUID, kind: APIKeyKind, key: String, name: String = "", scopes: [APIKeyScope]? = nil, id: UUID = UUID(),
        liveAtMost: Int, audit: AuditEntry? = nil
    ) async throws -> APIKeyRecord? {
        let scopeNames = scopes.map { $0.map(\.rawValue) }
        let hash = SecretHasher.hash(key)
        let prefix = String(key.prefix(8))
        let limit = Int64(min(liveAtMost, Int(Int64.max)))
        return try await client.transaction(logger: logger) { connection in
            if liveAtMost < .max {
                // NO KEY UPDATE: the app's devices and pushes (which take KEY SHARE on it) go on.
                try await connection.run(
                    "SELECT 1 FROM apps WHERE id = \(appID) FOR NO KEY UPDATE", logger: logger)
            }
            let rows = try await connection.run(
                """
                INSERT INTO api_keys (id, app_id, kind, key_hash, key_prefix, name, scopes)
                SELECT \(id), \(appID), \(kind.rawValue), \(hash.bytea), \(prefix), \(name), \(scopeNames)::text[]
                WHERE (SELECT count(*) FROM api_keys
                       WHERE app_id = \(appID) AND (revoked_at IS NULL OR revoked_at > now())) < \(limit)
                RETURNING \(unescaped: Self.columns)
                """, logger: logger)
            guard let created = try await Self.first(rows) else { return nil }
            if let audit { try await connection.append(audit, logger: logger) }
            return created
        }
    }

    /// The live key (not revoked, or rotated but still in its grace period) whose hash matches
    /// `key`, and marks it used.
    public func authenticate(key: String) async throws -> APIKeyRecord? {
        let hash = SecretHasher.hash(key)
        // A read first: a key nobody has costs an index look-up, never a write.
        let rows = try await client.boundedQuery(
            """
            SELECT \(unescaped: Self.columns) FROM api_keys
            WHERE key_hash = \(hash.bytea) AND (revoked_at IS NULL OR revoked_at > now())
            """, logger: logger)
        guard var record = try await Self.first(rows) else { return nil }
        let now = Date()
        _ = try await client.boundedQuery(
            "UPDATE api_keys SET last_used_at = \(now) WHERE id = \(record.id)", logger: logger)
        record.lastUsedAt = now
        return record
    }

    /// The key `id` if it is live (not revoked, or rotated but still in its grace period).
    public func liveKey(id: UUID) async throws -> APIKeyRecord? {
        let rows = try await client.boundedQuery(
            """
            SELECT \(unescaped: Self.columns) FROM api_keys
            WHERE id = \(id) AND (revoked_at IS NULL OR revoked_at > now())
            """, logger: logger)
        return try await Self.first(rows)
    }

    public func keys(appID: UUID) async throws -> [APIKeyRecord] {
        let rows = try await client.boundedQuery(
            """
            SELECT \(unescaped: Self.columns)
            FROM api_keys WHERE app_id = \(appID) ORDER BY created_at, id
            """, logger: logger)
        return try await Self.all(rows)
    }

    /// Revokes a key of `appID` at once, and appends `audit` with it. Returns whether a live key
    /// was revoked.
    @discardableResult
    public func revoke(id: UUID, appID: UUID, audit: AuditEntry? = nil) async throws -> Bool {
        // The schedules the key saved stop with it: their occurrences were sent on its authority.
        let rows = try await client.audited(
            """
            WITH revoked AS (
                UPDATE api_keys SET revoked_at = now()
                WHERE id = \(id) AND app_id = \(appID) AND (revoked_at IS NULL OR revoked_at > now()) RETURNING id
            ), paused AS (
                UPDATE schedules SET paused = true, updated_at = now(),
                    last_skip_reason = \(ScheduleRepository.keyEndedReason)
                WHERE saved_by_key IN (SELECT id FROM revoked) AND NOT paused
                RETURNING id
            )
            SELECT id FROM revoked
            """, audit, logger: logger)
        for try await _ in rows.decode(UUID.self) { return true }
        return false
    }

    /// Replaces the live key `id` of `appID` by a new one of the same kind and name, in one
    /// transaction: the old key keeps working for `graceSeconds` (0: it stops at once).
    /// - Parameters:
    ///   - makeKey: makes the new key for the old one's kind (only its hash is stored).
    ///   - audit: appended with the rotation.
    /// - Returns: the new key's record and the key, or `nil` when `id` is not a live key of `appID`.
    public func rotate(
        id: UUID, appID: UUID, graceSeconds: Int, newID: UUID = UUID(),
        makeKey: @escaping @Sendable (APIKeyKind) -> String, audit: AuditEntry? = nil
    ) async throws -> (record: APIKeyRecord, key: String)? {
        try await client.transaction(logger: logger) { connection in
            let old = try await connection.run(
                """
                UPDATE api_keys SET revoked_at = now() + make_interval(secs => \(Double(graceSeconds)))
                WHERE id = \(id) AND app_id = \(appID) AND (revoked_at IS NULL OR revoked_at > now())
                RETURNING kind, name, scopes
                """, logger: logger)
            var replaced: (String, String, [String]?)?
            for try await row in old.decode((String, String, [String]?).self) { replaced = row }
            guard let (kind, name, scopes) = replaced else { return nil }
            let newKey = makeKey(APIKeyKind(rawValue: kind) ?? .server)
            let hash = SecretHasher.hash(newKey)
            let prefix = String(newKey.prefix(8))
            let rows = try await connection.run(
                """
                INSERT INTO api_keys (id, app_id, kind, key_hash, key_prefix, name, scopes)
                VALUES (\(newID), \(appID), \(kind), \(hash.bytea), \(prefix), \(name), \(scopes)::text[])
                RETURNING \(unescaped: Self.columns)
                """, logger: logger)
            let record = try await Self.first(rows).map { ($0, newKey) }
            // The old key's schedules are the new key's now: they go on when the old one ends.
            try await connection.run(
                "UPDATE schedules SET saved_by_key = \(newID) WHERE saved_by_key = \(id)", logger: logger)
            if let audit { try await connection.append(audit, logger: logger) }
            return record
        }
    }

    static let columns = "id, app_id, kind, key_prefix, name, created_at, last_used_at, revoked_at, scopes"

    private static func first(_ rows: ReadRows) async throws -> APIKeyRecord? {
        try await all(rows).first
    }

    private static func all(_ rows: ReadRows) async throws -> [APIKeyRecord] {
        var keys: [APIKeyRecord] = []
        for try await (id, appID, kind, prefix, name, createdAt, lastUsedAt, revokedAt, scopes)
            in rows.decode((UUID, UUID, String, String, String, Date, Date?, Date?, [String]?).self)
        {
            // A kind or scope this version does not know grants nothing.
            guard let kind = APIKeyKind(rawValue: kind) else { continue }
            keys.append(
                APIKeyRecord(
                    id: id, appID: appID, kind: kind, keyPrefix: prefix, name: name, createdAt: createdAt,
                    lastUsedAt: lastUsedAt, revokedAt: revokedAt,
                    scopes: scopes.map { $0.compactMap(APIKeyScope.init(rawValue:)) }))
        }
        return keys
    }
}
