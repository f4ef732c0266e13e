import Foundation
import HeraldDomain
import Logging
import PostgresNIO

extension PostgresConnection {
    /// Appends `entry` on this connection: inside the transaction of the change it records.
    func append(_ entry: AuditEntry, logger: Logger) async throws {
        let detailsJSON = String(decoding: try JSONEncoder().encode(entry.details), as: UTF8.self)
        try await run(
            """
            INSERT INTO audit_events (app_id, actor, key_id, action, target, request_id, source_address, details)
            VALUES (\(entry.appID), \(AuditRepository.actorName(entry.origin.actor)), \(entry.origin.actor.keyID),
                    \(entry.action), \(entry.target), \(entry.origin.requestID), \(entry.origin.sourceAddress),
                    \(detailsJSON)::jsonb)
            """, logger: logger)
    }
}

extension PostgresClient {
    /// Runs `query` and, when it answers a row (it changed something: the statements given here
    /// say so with `RETURNING`), appends `entry` in the same transaction. Without an entry, the
    /// statement alone.
    @discardableResult
    func audited(_ query: PostgresQuery, _ entry: AuditEntry?, logger: Logger) async throws -> ReadRows {
        guard let entry else { return try await boundedQuery(query, logger: logger) }
        return try await transaction(logger: logger) { connection in
            let rows = try await connection.run(query, logger: logger)
            if !rows.rows.isEmpty { try await connection.append(entry, logger: logger) }
            return rows
        }
    }
}

/// The append-only audit log (table `audit_events`; the database refuses changes, truncation, and
/// deletions of entries younger than 30 days; the runtime role `herald_runtime` may only read and
/// append). Nothing secret is ever passed to it: callers record ids,
/// kinds and names.
public struct AuditRepository: Sendable {
    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Appends an entry on its own: for what changes nothing in the database (the change an
    /// entry records is otherwise made with it, in one transaction: ``AuditEntry``).
    public func record(_ entry: AuditEntry) async throws {
        try await client.boundedConnection { try await $0.append(entry, logger: logger) }
    }

    /// The entries of `appID`, oldest first, `limit` after the entry id `cursor`.
    public func events(appID: UUID, after cursor: Int64 = 0, limit: Int = 100) async throws -> [AuditEvent] {
        let rows = try await client.boundedQuery(
            """
            SELECT id, occurred_at, app_id, actor, key_id, action, target, request_id, source_address, details::text
            FROM audit_events WHERE app_id = \(appID) AND id > \(cursor) ORDER BY id LIMIT \(limit)
            """, logger: logger)
        var events: [AuditEvent] = []
        for try await (id, occurredAt, appID, actor, keyID, action, target, requestID, source, details) in rows.decode(
            (Int64, Date, UUID?, String, UUID?, String, String?, String?, String?, String).self)
        {
            let who: AuditActor = actor == "key" ? keyID.map(AuditActor.key) ?? .admin : .admin
            events.append(
                AuditEvent(
                    id: id, occurredAt: occurredAt, appID: appID,
                    origin: AuditOrigin(actor: who, requestID: requestID, sourceAddress: source), action: action,
                    target: target, detailsJSON: details))
        }
        return events
    }

    /// Deletes entries older than `age`, `batch` at a time, and returns how many went. Never an
    /// entry younger than the database's own floor (``keptAtLeast()``, which only the tables'
    /// owner sets; 400 days unless lowered, never under 30), whatever `age` asks for.
    @discardableResult
    public func deleteOlder(than age: Duration, batch: Int = 5000) async throws -> Int {
        let seconds = Double(age.components.seconds)  // the function keeps the floor and 30 days itself
        var deleted = 0
        while true {
            // As the log's owner, within the owner's floor: the runtime role may not delete from it
            // (migrations 0028 and 0029).
            let rows = try await client.boundedQuery(
                "SELECT herald_delete_old_audit_events(make_interval(secs => \(seconds)), \(Int32(clamping: batch)))",
                logger: logger)
            var count = 0
            for try await gone in rows.decode(Int32.self) { count = Int(gone) }
            deleted += count
            if count < batch { return deleted }
        }
    }

    /// How long the database keeps every entry whatever a retention asks: the owner's
    /// `herald_audit_policy` (migration 0029).
    public func keptAtLeast() async throws -> Duration {
        let rows = try await client.boundedQuery(
            "SELECT extract(epoch FROM kept_at_least)::float8 FROM herald_audit_policy", logger: logger)
        for try await seconds in rows.decode(Double.self) { return .seconds(seconds) }
        return .seconds(400 * 86_400)
    }

    static func actorName(_ actor: AuditActor) -> String {
        switch actor {
        case .admin: "admin"
        case .key: "key"
        }
    }
}
