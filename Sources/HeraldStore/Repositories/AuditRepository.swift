import Foundation
import Logging
import PostgresNIO

/// Who did something the audit log records.
public enum AuditActor: Sendable, Equatable {
    /// The global admin token.
    case admin
    /// An app's key (server, client or admin), by id.
    case key(UUID)

    public var keyID: UUID? {
        if case .key(let id) = self { id } else { nil }
    }
}

/// Where a recorded action came from: who, and through which request.
public struct AuditOrigin: Sendable, Equatable {
    public var actor: AuditActor
    /// The request's `X-Request-Id`.
    public var requestID: String?
    /// The address the request came from (a load balancer's, behind one).
    public var sourceAddress: String?

    public init(actor: AuditActor, requestID: String?, sourceAddress: String?) {
        self.actor = actor
        self.requestID = requestID
        self.sourceAddress = sourceAddress
    }
}

/// One entry of the audit log.
public struct AuditEvent: Sendable, Equatable {
    public var id: Int64
    public var occurredAt: Date
    public var appID: UUID?
    public var origin: AuditOrigin
    /// What happened, for example `push.created`, `key.revoked`, `credential.stored`.
    public var action: String
    /// What it touched: a push id, a key id, an environment.
    public var target: String?
    /// Facts about the action that are not secret (a key's kind and scopes, a push's audience
    /// kind), as a JSON object.
    public var detailsJSON: String
}

/// The append-only audit log (table `audit_events`; the database refuses changes, and deletions
/// of entries younger than 30 days). Nothing secret is ever passed to it: callers record ids,
/// kinds and names.
public struct AuditRepository: Sendable {
    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Appends an entry.
    /// - Parameter details: string facts about the action, stored as a JSON object.
    public func record(
        _ action: String, appID: UUID?, target: String? = nil, origin: AuditOrigin, details: [String: String] = [:]
    ) async throws {
        let detailsJSON = String(decoding: try JSONEncoder().encode(details), as: UTF8.self)
        _ = try await client.boundedQuery(
            """
            INSERT INTO audit_events (app_id, actor, key_id, action, target, request_id, source_address, details)
            VALUES (\(appID), \(Self.actorName(origin.actor)), \(origin.actor.keyID), \(action), \(target),
                    \(origin.requestID), \(origin.sourceAddress), \(detailsJSON)::jsonb)
            """, logger: logger)
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

    /// Deletes entries older than `age` (at least 30 days: the table refuses younger ones),
    /// `batch` at a time. Returns how many went.
    @discardableResult
    public func deleteOlder(than age: Duration, batch: Int = 5000) async throws -> Int {
        let seconds = Double(max(age, .seconds(30 * 86_400)).components.seconds)
        var deleted = 0
        while true {
            let rows = try await client.boundedQuery(
                """
                DELETE FROM audit_events WHERE id IN (
                    SELECT id FROM audit_events WHERE occurred_at < now() - make_interval(secs => \(seconds))
                    ORDER BY id LIMIT \(batch))
                RETURNING 1
                """, logger: logger)
            var count = 0
            for try await _ in rows { count += 1 }
            deleted += count
            if count < batch { return deleted }
        }
    }

    static func actorName(_ actor: AuditActor) -> String {
        switch actor {
        case .admin: "admin"
        case .key: "key"
        }
    }
}
