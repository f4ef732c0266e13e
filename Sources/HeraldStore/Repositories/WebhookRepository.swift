import Foundation
import HeraldDomain
import Logging
import PostgresNIO

/// An app's webhook endpoint; its secrets stay sealed here (``WebhookSecret``).
public struct WebhookEndpointRecord: Sendable, Equatable {
    public var id: UUID
    public var appID: UUID
    public var url: String
    public var description: String?
    public var eventTypes: [String]
    public var maxConcurrency: Int
    public var enabled: Bool
    public var createdAt: Date
}

/// A signing secret as stored: sealed under the master key whose id it names.
public struct WebhookSecret: Sendable, Equatable {
    public var sealed: [UInt8]
    public var sealingKeyID: String

    public init(sealed: [UInt8], sealingKeyID: String) {
        self.sealed = sealed
        self.sealingKeyID = sealingKeyID
    }

    /// What the sealing authenticates: the endpoint, and which of its secrets.
    public static func associatedData(endpointID: UUID, sealingKeyID: String) -> [UInt8] {
        Array("webhook/\(endpointID.uuidString.lowercased())/\(sealingKeyID)".utf8)
    }
}

/// A delivery claimed for sending: the event, the endpoint, its secrets and the attempts so far.
public struct WebhookDelivery: Sendable {
    public var endpointID: UUID
    public var url: String
    public var maxConcurrency: Int
    public var secrets: [WebhookSecret]
    public var eventID: UUID
    public var appID: UUID
    public var type: String
    /// The event's data, as JSON text.
    public var data: String
    public var createdAt: Date
    /// Where its 24-hour retry window starts: the event's creation, or the delivery's replay.
    public var retryWindowStart: Date
    /// Attempts before this one (since its replay, for a replayed one).
    public var attempts: Int
}

/// Webhook endpoints, events and their deliveries (migration 0015; docs/webhooks.md).
public struct WebhookRepository: Sendable {
    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    static let endpointColumns = "id, app_id, url, description, event_types, max_concurrency, enabled, created_at"

    /// Registers an endpoint with its sealed secret, and appends `audit` with it, unless the app
    /// has `limit` endpoints already.
    /// - Throws: ``PerAppLimitReached``.
    public func createEndpoint(
        id: UUID, appID: UUID, url: String, description: String?, eventTypes: [String], maxConcurrency: Int,
        secret: WebhookSecret, limit: Int = .max, audit: AuditEntry? = nil
    ) async throws -> WebhookEndpointRecord {
        let rows = try await client.transaction(logger: logger) { connection in
            let inserted = try await connection.insertWithinLimit(
                """
                INSERT INTO webhook_endpoints (id, app_id, url, description, event_types, max_concurrency, secret_sealed, sealing_key_id)
                VALUES (\(id), \(appID), \(url), \(description), \(eventTypes), \(Int32(maxConcurrency)), \(secret.sealed.bytea), \(secret.sealingKeyID))
                RETURNING \(unescaped: Self.endpointColumns)
                """, appID: appID, table: "webhook_endpoints", limit: limit, logger: logger)
            if let audit { try await connection.append(audit, logger: logger) }
            return inserted
        }
        guard let endpoint = try await Self.endpoints(from: rows).first else {
            throw StoreError(message: "creating a webhook endpoint returned no row")
        }
        return endpoint
    }

    /// The app's endpoints, oldest first.
    public func endpoints(appID: UUID) async throws -> [WebhookEndpointRecord] {
        let rows = try await client.boundedQuery(
            """
            SELECT \(unescaped: Self.endpointColumns) FROM webhook_endpoints WHERE app_id = \(appID) ORDER BY created_at, id
            """, logger: logger)
        return try await Self.endpoints(from: rows)
    }

    /// How many endpoints the app has.
    public func endpointCount(appID: UUID) async throws -> Int {
        let rows = try await client.boundedQuery(
            "SELECT count(*) FROM webhook_endpoints WHERE app_id = \(appID)", logger: logger)
        for try await count in rows.decode(Int64.self) { return Int(count) }
        return 0
    }

    /// Deletes the app's endpoint `id` with its deliveries and attempts, and appends `audit` with
    /// it. Returns whether it existed.
    public func deleteEndpoint(id: UUID, appID: UUID, audit: AuditEntry? = nil) async throws -> Bool {
        let rows = try await client.audited(
            "DELETE FROM webhook_endpoints WHERE id = \(id) AND app_id = \(appID) RETURNING id", audit, logger: logger)
        for try await _ in rows.decode(UUID.self) { return true }
        return false
    }

    /// What an update changes; nil fields stay as they are.
    public struct EndpointChanges: Sendable {
        public var url: String?
        public var description: String?
        public var eventTypes: [String]?
        public var maxConcurrency: Int?
        public var enabled: Bool?

        public init(
            url: String? = nil, description: String? = nil, eventTypes: [String]? = nil, maxConcurrency: Int? = nil,
            enabled: Bool? = nil
        ) {
            self.url = url
            self.description = description
            self.eventTypes = eventTypes
            self.maxConcurrency = maxConcurrency
            self.enabled = enabled
        }
    }

    /// Changes the app's endpoint `id`, with `audit` appended; nil when the app has no such
    /// endpoint.
    public func updateEndpoint(id: UUID, appID: UUID, _ changes: EndpointChanges, audit: AuditEntry? = nil)
        async throws -> WebhookEndpointRecord?
    {
        let rows = try await client.audited(
            """
            UPDATE webhook_endpoints SET url = COALESCE(\(changes.url), url),
                description = COALESCE(\(changes.description), description),
                event_types = COALESCE(\(changes.eventTypes)::text[], event_types),
                max_concurrency = COALESCE(\(changes.maxConcurrency.map(Int32.init)), max_concurrency),
                enabled = COALESCE(\(changes.enabled), enabled), updated_at = now()
            WHERE id = \(id) AND app_id = \(appID)
            RETURNING \(unescaped: Self.endpointColumns)
            """, audit, logger: logger)
        return try await Self.endpoints(from: rows).first
    }

    /// Gives the app's endpoint `id` a new secret; the one it had signs too until `previousUntil`
    /// (nil: at once no more). `audit` is appended with it. Returns the endpoint, or nil when the
    /// app has no such endpoint.
    public func replaceSecret(
        id: UUID, appID: UUID, secret: WebhookSecret, previousUntil: Date?, audit: AuditEntry? = nil
    ) async throws -> WebhookEndpointRecord? {
        let rows = try await client.audited(
            """
            UPDATE webhook_endpoints SET
                previous_secret_sealed = CASE WHEN \(previousUntil)::timestamptz IS NULL THEN NULL ELSE secret_sealed END,
                previous_sealing_key_id = CASE WHEN \(previousUntil)::timestamptz IS NULL THEN NULL ELSE sealing_key_id END,
                previous_secret_until = \(previousUntil),
                secret_sealed = \(secret.sealed.bytea), sealing_key_id = \(secret.sealingKeyID), updated_at = now()
            WHERE id = \(id) AND app_id = \(appID)
            RETURNING \(unescaped: Self.endpointColumns)
            """, audit, logger: logger)
        return try await Self.endpoints(from: rows).first
    }

    /// A delivery as listed: its event, state and attempts.
    public struct DeliveryRecord: Sendable {
        public var eventID: UUID
        public var type: String
        public var createdAt: Date
        public var state: String
        public var attempts: Int
        public var nextAttemptAt: Date?
        public var finishedAt: Date?
    }

    /// The deliveries of the app's endpoint `id` (of `state`, or all), newest event first, after
    /// the event `after`; nil when the app has no such endpoint.
    public func deliveries(endpointID: UUID, appID: UUID, state: String?, after: UUID?, limit: Int) async throws
        -> [DeliveryRecord]?
    {
        let rows = try await client.boundedQuery(
            """
            SELECT d.event_id, d.type, d.created_at, d.state, d.attempts, d.next_attempt_at, d.finished_at
            FROM webhook_endpoints w LEFT JOIN LATERAL (
                SELECT d.event_id, e.type, e.created_at, d.state, d.attempts,
                       CASE WHEN d.state = 'pending' THEN d.next_attempt_at END AS next_attempt_at, d.finished_at
                FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
                WHERE d.endpoint_id = w.id AND (\(state)::text IS NULL OR d.state = \(state))
                  AND (\(after)::uuid IS NULL OR (e.created_at, e.id) < (
                      SELECT created_at, id FROM webhook_events WHERE id = \(after)))
                ORDER BY e.created_at DESC, e.id DESC LIMIT \(limit)
            ) d ON true
            WHERE w.id = \(endpointID) AND w.app_id = \(appID)
            """, logger: logger)
        var found = false
        var deliveries: [DeliveryRecord] = []
        for try await (event, type, created, state, attempts, next, finished) in rows.decode(
            (UUID?, String?, Date?, String?, Int32?, Date?, Date?).self)
        {
            found = true
            guard let event, let type, let created, let state, let attempts else { continue }
            deliveries.append(
                DeliveryRecord(
                    eventID: event, type: type, createdAt: created, state: state, attempts: Int(attempts),
                    nextAttemptAt: next, finishedAt: finished))
        }
        return found ? deliveries : nil
    }

    /// Makes dead deliveries of the app's endpoint `id` pending again, due now, with a new retry
    /// window: those of `eventIDs`, or (nil) the oldest `limit`. Returns how many, or nil when
    /// the app has no such endpoint. `audit` is appended with the replay, with how many
    /// deliveries it took (`deliveries`).
    public func replayDead(
        endpointID: UUID, appID: UUID, eventIDs: [UUID]?, limit: Int, audit: AuditEntry? = nil
    ) async throws -> Int? {
        try await client.transaction(logger: logger) { connection in
            let rows = try await connection.run(
                Self.replaying(endpointID, appID: appID, eventIDs, limit), logger: logger)
            for try await (endpoints, replayed) in rows.decode((Int64, Int64).self) {
                guard endpoints > 0 else { return nil }
                if var audit {
                    audit.details["deliveries"] = "\(replayed)"
                    try await connection.append(audit, logger: logger)
                }
                return Int(replayed)
            }
            return nil
        }
    }

    private static func replaying(_ endpointID: UUID, appID: UUID, _ eventIDs: [UUID]?, _ limit: Int) -> PostgresQuery {
        """
        WITH endpoint AS (
            SELECT id FROM webhook_endpoints WHERE id = \(endpointID) AND app_id = \(appID)
        ), replayed AS (
            UPDATE webhook_deliveries d SET state = 'pending', attempts = 0, next_attempt_at = now(),
                retry_from = now(), finished_at = NULL, leased_until = NULL, leased_by = NULL
            WHERE d.endpoint_id IN (SELECT id FROM endpoint) AND d.state = 'dead'
              AND d.event_id IN (
                  SELECT event_id FROM webhook_deliveries
                  WHERE endpoint_id = \(endpointID) AND state = 'dead'
                    AND (\(eventIDs)::uuid[] IS NULL OR event_id = ANY(\(eventIDs)::uuid[]))
                  ORDER BY finished_at LIMIT \(limit))
            RETURNING 1
        )
        SELECT (SELECT count(*) FROM endpoint), (SELECT count(*) FROM replayed)
        """
    }

    /// Queues a `webhook.test` event for the app's endpoint `id` alone. Returns the event's id,
    /// or nil when the app has no such endpoint.
    public func queueTest(endpointID: UUID, appID: UUID) async throws -> UUID? {
        let event = UUID()
        let rows = try await client.boundedQuery(
            """
            WITH endpoint AS (
                SELECT id FROM webhook_endpoints WHERE id = \(endpointID) AND app_id = \(appID)
            ), event AS (
                INSERT INTO webhook_events (id, app_id, type, data)
                SELECT \(event), \(appID), 'webhook.test', jsonb_build_object('webhook_id', id) FROM endpoint
                RETURNING id
            )
            INSERT INTO webhook_deliveries (endpoint_id, event_id) SELECT \(endpointID), id FROM event
            RETURNING event_id
            """, logger: logger)
        for try await id in rows.decode(UUID.self) { return id }
        return nil
    }

    /// One attempt to deliver an event.
    public struct Attempt: Sendable {
        public var id: Int64
        public var eventID: UUID
        public var attemptedAt: Date
        public var status: Int?
        public var error: String?
        public var durationMilliseconds: Int
    }

    /// The attempts of the app's endpoint `id`, newest first, before the attempt `before`; nil
    /// when the app has no such endpoint.
    public func attempts(endpointID: UUID, appID: UUID, before: Int64?, limit: Int) async throws -> [Attempt]? {
        let rows = try await client.boundedQuery(
            """
            SELECT a.id, a.event_id, a.attempted_at, a.status, a.error, a.duration_ms
            FROM webhook_endpoints w LEFT JOIN LATERAL (
                SELECT * FROM webhook_attempts a WHERE a.endpoint_id = w.id AND (\(before)::bigint IS NULL OR a.id < \(before))
                ORDER BY a.id DESC LIMIT \(limit)
            ) a ON true
            WHERE w.id = \(endpointID) AND w.app_id = \(appID)
            """, logger: logger)
        var found = false
        var attempts: [Attempt] = []
        for try await (id, event, at, status, error, duration) in rows.decode(
            (Int64?, UUID?, Date?, Int16?, String?, Int32?).self)
        {
            found = true
            guard let id, let event, let at, let duration else { continue }
            attempts.append(
                Attempt(
                    id: id, eventID: event, attemptedAt: at, status: status.map(Int.init), error: error,
                    durationMilliseconds: Int(duration)))
        }
        return found ? attempts : nil
    }

    /// The advisory lock webhook claims take turns by ("HRLDWHCL").
    static let claimLockKey: Int64 = 0x4852_4C44_5748_434C

    /// Claims up to `limit` deliveries that are due, for `lease`, oldest first, within two bounds
    /// decided inside the statement: an endpoint's leased deliveries (by any center) never exceed
    /// its `max_concurrency`, and an app's requests in flight in this center (`appInFlight`,
    /// which the center counts) never exceed `appShare`. One app's endpoint that hangs holds at
    /// most its share of the center's slots; the others are left to every other app.
    public func claimDue(
        limit: Int, by center: String, lease: Duration, appInFlight: [UUID: Int] = [:], appShare: Int = .max
    ) async throws -> [WebhookDelivery] {
        let busyApps = Array(appInFlight.keys)
        let busyCounts = busyApps.map { Int64(appInFlight[$0] ?? 0) }
        let share = Int64(min(appShare, Int(Int32.max)))
        // Due deliveries are read a few times the claim's size deep, so that one endpoint's
        // backlog leaves room for others in the same claim.
        let depth = max(limit * 8, 64)
        // Claims take turns across centers (a transaction-scoped lock, then the claim as a
        // statement of its own, whose snapshot sees every lease committed before it): two
        // centers claiming at once could each count an endpoint's leases without the other's.
        let rows = try await client.transaction(logger: logger) { connection in
            try await connection.run("SELECT pg_advisory_xact_lock(\(Self.claimLockKey))", logger: logger)
            return try await connection.run(
                """
                WITH in_flight (app_id, requests) AS (
                    SELECT * FROM unnest(\(busyApps)::uuid[], \(busyCounts)::int8[])
                ),
                candidates AS (
                    SELECT d.endpoint_id, d.event_id, d.next_attempt_at, w.app_id, w.max_concurrency
                    FROM webhook_deliveries d
                    JOIN webhook_endpoints w ON w.id = d.endpoint_id
                    WHERE d.state = 'pending' AND d.next_attempt_at <= now()
                      AND (d.leased_until IS NULL OR d.leased_until < now()) AND w.enabled
                      AND (SELECT count(*) FROM webhook_deliveries l
                           WHERE l.endpoint_id = d.endpoint_id AND l.state = 'pending' AND l.leased_until >= now())
                          < w.max_concurrency
                      AND COALESCE((SELECT f.requests FROM in_flight f WHERE f.app_id = w.app_id), 0) < \(share)
                    ORDER BY d.next_attempt_at LIMIT \(depth)
                    FOR UPDATE OF d SKIP LOCKED
                ),
                leased AS (
                    SELECT c.endpoint_id, count(l.event_id) AS busy
                    FROM (SELECT DISTINCT endpoint_id FROM candidates) c
                    LEFT JOIN webhook_deliveries l
                      ON l.endpoint_id = c.endpoint_id AND l.state = 'pending' AND l.leased_until >= now()
                    GROUP BY c.endpoint_id
                ),
                due AS (
                    SELECT endpoint_id, event_id FROM (
                        SELECT c.endpoint_id, c.event_id, c.next_attempt_at,
                               c.max_concurrency - e.busy AS endpoint_room,
                               \(share) - COALESCE(f.requests, 0) AS app_room,
                               row_number() OVER (PARTITION BY c.endpoint_id ORDER BY c.next_attempt_at) AS endpoint_rank,
                               row_number() OVER (PARTITION BY c.app_id ORDER BY c.next_attempt_at) AS app_rank
                        FROM candidates c
                        JOIN leased e ON e.endpoint_id = c.endpoint_id
                        LEFT JOIN in_flight f ON f.app_id = c.app_id
                    ) ranked
                    WHERE endpoint_rank <= endpoint_room AND app_rank <= app_room
                    ORDER BY next_attempt_at LIMIT \(limit)
                )
                UPDATE webhook_deliveries d
                SET leased_until = now() + \(lease.wholeMilliseconds) * interval '1 millisecond', leased_by = \(center)
                FROM due, webhook_endpoints w, webhook_events e
                WHERE d.endpoint_id = due.endpoint_id AND d.event_id = due.event_id
                  AND w.id = d.endpoint_id AND e.id = d.event_id
                RETURNING d.endpoint_id, w.url, w.max_concurrency, w.secret_sealed, w.sealing_key_id,
                          CASE WHEN w.previous_secret_until > now() THEN w.previous_secret_sealed END,
                          CASE WHEN w.previous_secret_until > now() THEN w.previous_sealing_key_id END,
                          e.id, e.app_id, e.type, e.data::text, e.created_at, d.attempts,
                          COALESCE(d.retry_from, e.created_at)
                """, logger: logger)
        }
        var deliveries: [WebhookDelivery] = []
        for try await row in rows {
            let cells = row.makeRandomAccess()
            var secrets = [
                WebhookSecret(
                    sealed: try cells[3].decode(ByteBuffer.self).bytes, sealingKeyID: try cells[4].decode(String.self))
            ]
            if let previous = try cells[5].decode(ByteBuffer?.self), let key = try cells[6].decode(String?.self) {
                secrets.append(WebhookSecret(sealed: previous.bytes, sealingKeyID: key))
            }
            deliveries.append(
                WebhookDelivery(
                    endpointID: try cells[0].decode(UUID.self), url: try cells[1].decode(String.self),
                    maxConcurrency: Int(try cells[2].decode(Int32.self)), secrets: secrets,
                    eventID: try cells[7].decode(UUID.self), appID: try cells[8].decode(UUID.self),
                    type: try cells[9].decode(String.self), data: try cells[10].decode(String.self),
                    createdAt: try cells[11].decode(Date.self), retryWindowStart: try cells[13].decode(Date.self),
                    attempts: Int(try cells[12].decode(Int32.self))))
        }
        return deliveries
    }

    /// Writes the `push.engagement` webhook event of each push whose mark is due, at most `limit`:
    /// its engagement totals as they stand now, and the devices reached. The marks are left by
    /// ``EngagementRepository/record(_:appID:)``, at most one a push per
    /// ``EngagementRepository/reportInterval`` (migration 0036); marks another center takes at the
    /// same time are skipped. Returns how many were written.
    public func writeDueEngagementEvents(limit: Int = 100) async throws -> Int {
        let rows = try await client.boundedQuery(
            """
            WITH due AS (
                DELETE FROM push_engagement_reports
                WHERE push_id IN (SELECT push_id FROM push_engagement_reports WHERE due_at <= now()
                                  ORDER BY due_at LIMIT \(limit) FOR UPDATE SKIP LOCKED)
                RETURNING push_id, app_id
            ), totals AS (
                SELECT d.push_id, d.app_id,
                       COALESCE(pc.accepted + pc.delivered_online, 0) AS reached,
                       COALESCE(sum(c.received), 0) AS received, COALESCE(sum(c.opened), 0) AS opened,
                       COALESCE(sum(c.dismissed), 0) AS dismissed, COALESCE(herald_sum_counts(c.actions), '{}') AS actions
                FROM due d
                LEFT JOIN push_counters pc ON pc.push_id = d.push_id
                LEFT JOIN push_engagement_counts c ON c.push_id = d.push_id
                GROUP BY d.push_id, d.app_id, pc.accepted, pc.delivered_online
            )
            SELECT herald_webhook_event(app_id, 'push.engagement', jsonb_build_object(
                'push_id', push_id, 'engagement', jsonb_build_object(
                    'reached', reached, 'received', received, 'opened', opened, 'dismissed', dismissed,
                    'actions', actions,
                    'open_rate', CASE WHEN reached > 0 THEN round(opened::numeric / reached, 4) ELSE 0 END)))
            FROM totals
            """, logger: logger)
        var written = 0
        for try await _ in rows { written += 1 }
        return written
    }

    /// Deletes up to `limit` attempts older than `attempts`, and up to `limit` events older than
    /// `events` that no delivery is still pending for (their deliveries go with them).
    /// - Returns: how many rows went.
    @discardableResult
    public func purge(attemptsOlderThan attempts: Duration, eventsOlderThan events: Duration, limit: Int)
        async throws -> Int
    {
        let rows = try await client.boundedQuery(
            """
            WITH old_attempts AS (
                DELETE FROM webhook_attempts WHERE id IN (
                    SELECT id FROM webhook_attempts
                    WHERE attempted_at < now() - \(attempts.wholeMilliseconds) * interval '1 millisecond'
                    ORDER BY id LIMIT \(limit))
                RETURNING 1
            ), old_events AS (
                DELETE FROM webhook_events WHERE id IN (
                    SELECT e.id FROM webhook_events e
                    WHERE e.created_at < now() - \(events.wholeMilliseconds) * interval '1 millisecond'
                      AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id AND d.state = 'pending')
                    ORDER BY e.created_at LIMIT \(limit))
                RETURNING 1
            )
            SELECT (SELECT count(*) FROM old_attempts) + (SELECT count(*) FROM old_events)
            """, logger: logger)
        for try await count in rows.decode(Int64.self) { return Int(count) }
        return 0
    }

    /// What became of one attempt: recorded, and the delivery delivered, scheduled again at
    /// `retryAt`, or dead (`retryAt` nil and not delivered) — by `center` only while it still
    /// holds the delivery's lease (a center whose lease ran out, and another took the delivery,
    /// records its attempt but changes nothing).
    public func recordAttempt(
        endpointID: UUID, eventID: UUID, by center: String, status: Int?, error: String?, duration: Duration,
        delivered: Bool, retryAt: Date?
    ) async throws {
        let state = delivered ? "delivered" : (retryAt == nil ? "dead" : "pending")
        try await client.boundedQuery(
            """
            WITH attempt AS (
                INSERT INTO webhook_attempts (endpoint_id, event_id, status, error, duration_ms)
                VALUES (\(endpointID), \(eventID), \(status.map { Int16(clamping: $0) }), \(error),
                        \(Int32(clamping: duration.wholeMilliseconds)))
            )
            UPDATE webhook_deliveries SET attempts = attempts + 1, state = \(state), leased_until = NULL, leased_by = NULL,
                next_attempt_at = COALESCE(\(retryAt), next_attempt_at),
                finished_at = CASE WHEN \(state) = 'pending' THEN NULL ELSE now() END
            WHERE endpoint_id = \(endpointID) AND event_id = \(eventID) AND leased_by = \(center)
            """, logger: logger)
    }

    static func endpoints(from rows: ReadRows) async throws -> [WebhookEndpointRecord] {
        var endpoints: [WebhookEndpointRecord] = []
        for try await row in rows {
            let cells = row.makeRandomAccess()
            endpoints.append(
                WebhookEndpointRecord(
                    id: try cells[0].decode(UUID.self), appID: try cells[1].decode(UUID.self),
                    url: try cells[2].decode(String.self), description: try cells[3].decode(String?.self),
                    eventTypes: try cells[4].decode([String].self),
                    maxConcurrency: Int(try cells[5].decode(Int32.self)), enabled: try cells[6].decode(Bool.self),
                    createdAt: try cells[7].decode(Date.self)))
        }
        return endpoints
    }
}
