import Foundation
import HeraldDomain
import PostgresNIO

/// What the Open API shows of a push: the push, its counters, and its fan-out progress.
public struct PushProgress: Sendable {
    public var push: Push
    public var counters: PushCounters
    public var paused: Bool
    public var audienceSize: Int64?
    public var etaAt: Date?
    public var fanoutStartedAt: Date?
    public var fanoutFinishedAt: Date?
    /// A push sent in waves: its plan, once made (docs/local-time.md).
    public var waves: [PushWave] = []
}

/// An app's numbers: devices by status and environment, pushes by state, delivery totals.
public struct AppStatistics: Sendable {
    public var devices = DeviceGroupCounts()
    public var pushesByState: [String: Int64] = [:]
    public var delivery = PushCounters()
}

/// An app's pushes and their outcomes in one UTC day or hour.
public struct StatisticsBucket: Sendable, Equatable {
    public var start: Date
    public var pushes: Int64
    public var targeted: Int64
    public var accepted: Int64
    public var deliveredOnline: Int64
    public var rejected: Int64
    public var expired: Int64
    public var canceled: Int64
    /// Devices that reported receiving and opening the bucket's pushes (docs/engagement.md).
    public var received: Int64 = 0
    public var opened: Int64 = 0
}

extension PushRepository {
    /// The pushes of `appID` created since `since`, and their outcomes, per UTC day (`hourly`
    /// false: pushes past the retention window count from `push_statistics_daily`) or per hour,
    /// oldest first; buckets without pushes are left out. A range of `pushes_by_app`.
    public func timeline(appID: UUID, since: Date, hourly: Bool) async throws -> [StatisticsBucket] {
        let unit = hourly ? "hour" : "day"
        let rows = try await client.boundedQuery(
            """
            SELECT bucket, sum(pushes)::bigint, sum(targeted)::bigint, sum(accepted)::bigint, sum(rejected)::bigint,
                   sum(expired)::bigint, sum(canceled)::bigint, sum(delivered_online)::bigint,
                   sum(received)::bigint, sum(opened)::bigint
            FROM (
                SELECT date_trunc(\(unit), p.created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS bucket, 1 AS pushes,
                       COALESCE(c.targeted, 0) AS targeted, COALESCE(c.accepted, 0) AS accepted,
                       COALESCE(c.rejected, 0) AS rejected, COALESCE(c.expired, 0) AS expired,
                       COALESCE(c.canceled, 0) AS canceled, COALESCE(c.delivered_online, 0) AS delivered_online,
                       COALESCE(e.received, 0) AS received, COALESCE(e.opened, 0) AS opened
                FROM pushes p LEFT JOIN push_counters c ON c.push_id = p.id
                LEFT JOIN LATERAL (SELECT sum(received) AS received, sum(opened) AS opened
                                   FROM push_engagement_counts WHERE push_id = p.id) e ON true
                WHERE p.app_id = \(appID) AND p.created_at >= \(since)
                UNION ALL
                SELECT day::timestamp AT TIME ZONE 'UTC', pushes, targeted, accepted, rejected, expired, canceled,
                       delivered_online, received, opened
                FROM push_statistics_daily
                WHERE NOT \(hourly) AND app_id = \(appID) AND day >= (\(since)::timestamptz AT TIME ZONE 'UTC')::date
            ) AS buckets
            GROUP BY bucket ORDER BY bucket
            """, logger: logger)
        var buckets: [StatisticsBucket] = []
        for try await (start, pushes, targeted, accepted, rejected, expired, canceled, online, received, opened)
            in rows.decode((Date, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64).self)
        {
            buckets.append(
                StatisticsBucket(
                    start: start, pushes: pushes, targeted: targeted, accepted: accepted, deliveredOnline: online,
                    rejected: rejected, expired: expired, canceled: canceled, received: received, opened: opened))
        }
        return buckets
    }

    /// The push `id` of `appID` with its counters and progress.
    public func progress(id: UUID, appID: UUID) async throws -> PushProgress? {
        try await progress(where: "p.id = \(id) AND p.app_id = \(appID)", limit: 1).first
    }

    /// An app's pushes with their progress, newest first, `limit` at a time before `cursor`.
    public func progressList(
        appID: UUID, state: PushState?, before cursor: UUID?, limit: Int, scheduleID: UUID? = nil
    ) async throws
        -> [PushProgress]
    {
        try await progress(
            where: """
                p.app_id = \(appID) AND (\(state?.rawValue)::text IS NULL OR p.state = \(state?.rawValue)::text)
                AND (\(scheduleID)::uuid IS NULL OR p.schedule_id = \(scheduleID)::uuid)
                AND (\(cursor)::uuid IS NULL OR (p.created_at, p.id) < (SELECT created_at, id FROM pushes WHERE id = \(cursor)::uuid AND app_id = \(appID)))
                """, limit: limit)
    }

    /// Whether the stored push `id` was created from this audience, notification and options
    /// (compared as JSON values, so key order and spacing do not matter).
    public func matches(id: UUID, audienceJSON: String, notificationJSON: String, optionsJSON: String) async throws
        -> Bool
    {
        let rows = try await client.boundedQuery(
            """
            SELECT audience = \(audienceJSON)::jsonb AND notification = \(notificationJSON)::jsonb AND options = \(optionsJSON)::jsonb
            FROM pushes WHERE id = \(id)
            """, logger: logger)
        for try await same in rows.decode(Bool.self) { return same }
        return false
    }

    /// The recall push of `pushID`, if one was made.
    public func recall(of pushID: UUID, appID: UUID) async throws -> Push? {
        let rows = try await client.boundedQuery(
            """
            SELECT \(unescaped: Self.pushColumns) FROM pushes WHERE recall_of = \(pushID) AND app_id = \(appID)
            ORDER BY created_at LIMIT 1
            """, logger: logger)
        return try await Self.pushes(from: rows).first
    }

    /// The app's devices, pushes created since `since`, and their delivery totals.
    public func statistics(appID: UUID, since: Date) async throws -> AppStatistics {
        var statistics = AppStatistics()
        // Kept counts (migration 0014), not count(*) over the app's devices.
        statistics.devices = try await DeviceCountRepository(client: client, logger: logger).devices(appID: appID)
        let pushes = try await client.boundedQuery(
            """
            SELECT state, count(*) FROM pushes WHERE app_id = \(appID) AND created_at >= \(since) GROUP BY state
            """, logger: logger)
        for try await (state, count) in pushes.decode((String, Int64).self) { statistics.pushesByState[state] = count }
        let totals = try await client.boundedQuery(
            """
            SELECT COALESCE(sum(c.targeted), 0)::bigint, COALESCE(sum(c.accepted), 0)::bigint, COALESCE(sum(c.rejected), 0)::bigint,
                   COALESCE(sum(c.expired), 0)::bigint, COALESCE(sum(c.canceled), 0)::bigint,
                   COALESCE(sum(c.tokens_invalidated), 0)::bigint,
                   COALESCE((SELECT jsonb_object_agg(reason, total) FROM (
                       SELECT r.key AS reason, sum(r.value::bigint) AS total
                       FROM push_counters c2 JOIN pushes p2 ON p2.id = c2.push_id, jsonb_each_text(c2.rejected_by_reason) r
                       WHERE p2.app_id = \(appID) AND p2.created_at >= \(since) GROUP BY r.key) reasons), '{}')::text,
                   COALESCE(sum(c.skipped), 0)::bigint, herald_sum_counts(c.skipped_by_reason)::text,
                   COALESCE(sum(c.delivered_online), 0)::bigint
            FROM push_counters c JOIN pushes p ON p.id = c.push_id
            WHERE p.app_id = \(appID) AND p.created_at >= \(since)
            """, logger: logger)
        for try await row in totals { statistics.delivery = try PushCounters(row.makeRandomAccess(), from: 0) }
        // Pushes past the retention window live on as per-day numbers (RetentionRepository): the
        // days from `since`'s on count whole.
        let purged = try await client.boundedQuery(
            """
            SELECT state, pushes, targeted, accepted, rejected, expired, canceled, tokens_invalidated,
                   rejected_by_reason::text, skipped, skipped_by_reason::text, delivered_online
            FROM push_statistics_daily WHERE app_id = \(appID) AND day >= (\(since)::timestamptz AT TIME ZONE 'UTC')::date
            """, logger: logger)
        for try await row in purged {
            let cells = row.makeRandomAccess()
            let state = try cells[0].decode(String.self)
            statistics.pushesByState[state, default: 0] += try cells[1].decode(Int64.self)
            statistics.delivery.add(try PushCounters(cells, from: 2))
        }
        return statistics
    }

    private func progress(where condition: PostgresQuery, limit: Int) async throws -> [PushProgress] {
        // The push's columns first (decoded as everywhere else), then its progress.
        let first = Self.pushColumnCount
        var query = PostgresQuery(
            unsafeSQL: """
                SELECT \(Self.pushColumns),
                       p.paused_at IS NOT NULL, p.audience_size, p.eta_at, p.fanout_started_at, p.fanout_finished_at,
                       \(PushCounters.columns),
                       CASE WHEN p.waves IS NOT NULL THEN (
                           SELECT jsonb_agg(jsonb_build_object('index', w.wave, 'due', extract(epoch FROM w.due_at),
                                   'zones', w.time_zones, 'devices', w.devices, 'first', w.first_sequence) ORDER BY w.wave)
                           FROM push_waves w WHERE w.push_id = p.id)::text END
                FROM pushes p LEFT JOIN push_counters c ON c.push_id = p.id
                WHERE
                """, binds: condition.binds)
        query.sql += " " + condition.sql + " ORDER BY p.created_at DESC, p.id DESC LIMIT \(max(1, limit))"
        let rows = try await client.boundedQuery(query, logger: logger)
        var result: [PushProgress] = []
        for try await row in rows {
            let cells = row.makeRandomAccess()
            result.append(
                PushProgress(
                    push: try Self.push(from: row), counters: try PushCounters(cells, from: first + 5),
                    paused: try cells[first].decode(Bool.self),
                    audienceSize: try cells[first + 1].decode(Int64?.self),
                    etaAt: try cells[first + 2].decode(Date?.self),
                    fanoutStartedAt: try cells[first + 3].decode(Date?.self),
                    fanoutFinishedAt: try cells[first + 4].decode(Date?.self),
                    waves: StoredWave.waves(json: try cells[cells.count - 1].decode(String?.self))))
        }
        return result
    }

    /// A wave as the status query aggregates it.
    private struct StoredWave: Decodable {
        var index: Int
        var due: Double
        var zones: [String]
        var devices: Int64
        var first: Int?

        static func waves(json: String?) -> [PushWave] {
            guard let json, let stored = try? JSONDecoder().decode([StoredWave].self, from: Data(json.utf8)) else {
                return []
            }
            return stored.map {
                PushWave(
                    index: $0.index, dueAt: Date(timeIntervalSince1970: $0.due), timeZones: $0.zones,
                    devices: $0.devices, firstSequence: $0.first)
            }
        }
    }
}

extension PushRepository {
    /// A page of the devices push `pushID` did not reach, with when each was recorded.
    public func failurePage(pushID: UUID, reason: String? = nil, after cursor: Int64, limit: Int) async throws -> [(
        failure: FailedDelivery, failedAt: Date
    )] {
        let rows = try await client.boundedQuery(
            """
            SELECT device_id, status, NULLIF(reason, ''), NULLIF(http_status, 0), attempts, failed_at FROM failed_deliveries
            WHERE push_id = \(pushID) AND device_id > \(cursor)
              AND (\(reason)::text IS NULL OR COALESCE(NULLIF(reason, ''), status) = \(reason))
            ORDER BY device_id LIMIT \(limit)
            """, logger: logger)
        var page: [(FailedDelivery, Date)] = []
        for try await (deviceID, status, reason, httpStatus, attempts, failedAt)
            in rows.decode((Int64, String, String?, Int16?, Int16, Date).self)
        {
            page.append(
                (
                    FailedDelivery(
                        pushID: pushID, deviceID: deviceID,
                        status: FailedDelivery.Status(rawValue: status) ?? .rejected,
                        reason: reason, httpStatus: httpStatus.map(Int.init), attempts: Int(attempts)), failedAt
                ))
        }
        return page
    }
}

extension PushCounters {
    /// The columns ``init(_:from:)`` reads, of push_counters (or push_statistics_daily) as `c`.
    static let columns = """
        COALESCE(c.targeted, 0), COALESCE(c.accepted, 0), COALESCE(c.rejected, 0), COALESCE(c.expired, 0), \
        COALESCE(c.canceled, 0), COALESCE(c.tokens_invalidated, 0), COALESCE(c.rejected_by_reason, '{}')::text, \
        COALESCE(c.skipped, 0), COALESCE(c.skipped_by_reason, '{}')::text, COALESCE(c.delivered_online, 0)
        """

    /// The counters in ten columns of a row from `first` on (``columns``): targeted, accepted,
    /// rejected, expired, canceled, tokens invalidated, the rejections by reason as JSON text,
    /// skipped, the skipped by reason as JSON text, and delivered online.
    init(_ cells: PostgresRandomAccessRow, from first: Int) throws {
        self.init()
        targeted = try cells[first].decode(Int64.self)
        accepted = try cells[first + 1].decode(Int64.self)
        rejected = try cells[first + 2].decode(Int64.self)
        expired = try cells[first + 3].decode(Int64.self)
        canceled = try cells[first + 4].decode(Int64.self)
        tokensInvalidated = try cells[first + 5].decode(Int64.self)
        let reasons = try cells[first + 6].decode(String.self)
        rejectedByReason = (try? JSONDecoder().decode([String: Int64].self, from: Data(reasons.utf8))) ?? [:]
        skipped = try cells[first + 7].decode(Int64.self)
        let skippedReasons = try cells[first + 8].decode(String.self)
        skippedByReason =
            (try? JSONDecoder().decode([String: Int64].self, from: Data(skippedReasons.utf8))) ?? [:]
        deliveredOnline = try cells[first + 9].decode(Int64.self)
    }

    /// Adds `other`'s counts to these.
    mutating func add(_ other: PushCounters) {
        targeted += other.targeted
        accepted += other.accepted
        deliveredOnline += other.deliveredOnline
        rejected += other.rejected
        expired += other.expired
        canceled += other.canceled
        tokensInvalidated += other.tokensInvalidated
        rejectedByReason.merge(other.rejectedByReason, uniquingKeysWith: +)
        skipped += other.skipped
        skippedByReason.merge(other.skippedByReason, uniquingKeysWith: +)
    }
}
