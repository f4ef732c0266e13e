import Foundation
import HeraldDomain
import Logging
import PostgresNIO

/// What phones report about the pushes they were sent (`push_engagement_events`, migration 0032)
/// and the counts kept from it (`push_engagement_counts`), read by a push's status.
public struct EngagementRepository: Sendable {
    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Why a batch was refused, naming its first event at fault (its index in the batch).
    public enum Refusal: Sendable, Equatable {
        /// The event names a push that is not the app's (or no longer exists).
        case unknownPush(index: Int)
        /// The event's token is no device of the app.
        case unknownDevice(index: Int)
        /// The push exists but was not sent to that device.
        case notSent(index: Int)
    }

    /// What storing a batch did.
    public enum Recording: Sendable, Equatable {
        /// Stored; `counted` events were new, the rest were counted before.
        case recorded(counted: Int)
        case refused(Refusal)
    }

    /// Stores `reports` of app `appID`'s devices in one transaction, or nothing when one of them
    /// names another app's push, an unknown token or a push that device was not sent.
    ///
    /// "Sent to that device" is read from the push's batches whose device range holds it (a GiST
    /// index, migration 0032): the devices APNs accepted or the gateway delivered once a batch's
    /// outcome is back, and while a batch is still on its way every device of its range (a phone
    /// may report a push before its sender's outcome arrives).
    public func record(_ reports: [EngagementReport], appID: UUID) async throws -> Recording {
        guard !reports.isEmpty else { return .recorded(counted: 0) }
        let pushIDs = reports.map(\.pushID)
        let tokens = reports.map { ByteBuffer(bytes: $0.token) }
        return try await client.transaction(logger: logger) { connection in
            let checked = try await connection.run(
                """
                SELECT e.i::int, p.id IS NOT NULL, d.id, p.split::text,
                       COALESCE((SELECT bool_or(b.completed_at IS NULL OR d.id = ANY(b.accepted_device_ids)
                                                OR d.id = ANY(b.delivered_online_device_ids))
                                 FROM push_batches b
                                 WHERE box(point(b.first_device, uuid_hash(b.push_id)), point(b.last_device, uuid_hash(b.push_id)))
                                       @> box(point(d.id, uuid_hash(p.id)), point(d.id, uuid_hash(p.id)))
                                   -- Not "=": an equality the primary key could answer led the planner to
                                   -- read every batch of the push (2,400 here; 20,000 in a 10M broadcast)
                                   -- instead of the few the range index finds.
                                   AND b.push_id IS NOT DISTINCT FROM p.id), false)
                FROM unnest(\(pushIDs)::uuid[], \(tokens)::bytea[]) WITH ORDINALITY AS e(push_id, token, i)
                LEFT JOIN pushes p ON p.id = e.push_id AND p.app_id = \(appID)
                LEFT JOIN devices d ON d.app_id = \(appID) AND d.token = e.token
                ORDER BY e.i
                """, logger: logger)
            var deviceIDs: [Int64] = []
            deviceIDs.reserveCapacity(reports.count)
            // An A/B test's events count toward the device's variant (-1: a push without one).
            var variants: [Int16] = []
            variants.reserveCapacity(reports.count)
            var splits: [String: PushSplit] = [:]
            for try await (position, pushFound, deviceID, split, sent)
                in checked.decode((Int, Bool, Int64?, String?, Bool).self)
            {
                let index = position - 1
                guard pushFound else { return .refused(.unknownPush(index: index)) }
                guard let deviceID else { return .refused(.unknownDevice(index: index)) }
                guard sent else { return .refused(.notSent(index: index)) }
                var variant: Int16 = -1
                if let split {
                    if splits[split] == nil { splits[split] = PushSplit(json: split) }
                    if let decoded = splits[split] {
                        // A held-out device was never sent the push, though its batch's range
                        // (in flight) holds it.
                        guard let assigned = decoded.variant(pushID: reports[index].pushID, deviceID: deviceID) else {
                            return .refused(.notSent(index: index))
                        }
                        variant = Int16(assigned)
                    }
                }
                deviceIDs.append(deviceID)
                variants.append(variant)
            }
            let rows = try await connection.run(
                """
                WITH new AS (
                    INSERT INTO push_engagement_events (push_id, device_id, type, action, text_input, occurred_at)
                    SELECT * FROM unnest(\(pushIDs)::uuid[], \(deviceIDs)::bigint[], \(reports.map(\.type.rawValue))::text[],
                                         \(reports.map(\.action))::text[], \(reports.map(\.textInput))::boolean[],
                                         \(reports.map(\.occurredAt))::timestamptz[])
                    -- In key order: two batches holding the same events take their keys in the same
                    -- order, and never wait on each other in a circle.
                    ORDER BY 1, 2, 3, 4
                    ON CONFLICT DO NOTHING
                    RETURNING push_id, device_id, type, action, text_input, occurred_at
                ), variants AS (
                    SELECT DISTINCT * FROM unnest(\(pushIDs)::uuid[], \(deviceIDs)::bigint[], \(variants)::int2[])
                        AS v(push_id, device_id, variant)
                ), per_action AS (
                    -- A push's counts name at most 20 action identifiers (a batch may bring more at
                    -- once); past them an action counts under "(other)", so reports cannot grow
                    -- the counts without bound. The events keep every identifier.
                    SELECT new.push_id, variants.variant, type,
                           CASE WHEN type <> 'action'
                                     OR EXISTS (SELECT 1 FROM push_engagement_counts c
                                                WHERE c.push_id = new.push_id AND c.actions ? new.action)
                                     OR (SELECT count(DISTINCT k) FROM push_engagement_counts c, jsonb_object_keys(c.actions) k
                                         WHERE c.push_id = new.push_id) < \(Self.namedActions)
                                THEN action ELSE '(other)' END AS action,
                           count(*) AS n
                    FROM new JOIN variants USING (push_id, device_id) GROUP BY 1, 2, 3, 4
                ), per_shard AS (
                    SELECT push_id, variant, \(Int.random(in: 0..<Self.shards))::smallint AS shard,
                           COALESCE(sum(n) FILTER (WHERE type = 'received'), 0) AS received,
                           COALESCE(sum(n) FILTER (WHERE type = 'opened'), 0) AS opened,
                           COALESCE(sum(n) FILTER (WHERE type = 'dismissed'), 0) AS dismissed,
                           COALESCE(jsonb_object_agg(action, n) FILTER (WHERE type = 'action'), '{}') AS actions
                    FROM per_action GROUP BY 1, 2
                ), kept AS (
                    -- In push order, so that two batches about the same pushes lock their rows in
                    -- the same order and never wait on each other in a circle.
                    INSERT INTO push_engagement_counts AS c (push_id, variant, shard, received, opened, dismissed, actions)
                    SELECT * FROM per_shard ORDER BY push_id, variant
                    ON CONFLICT (push_id, variant, shard) DO UPDATE SET
                        received = c.received + excluded.received, opened = c.opened + excluded.opened,
                        dismissed = c.dismissed + excluded.dismissed,
                        actions = herald_add_counts(c.actions, excluded.actions)
                ), marked AS (
                    -- push.engagement: a mark, due in a minute, for each push with new events, when
                    -- the app has an endpoint for it (migration 0036; the dispatcher writes the event).
                    INSERT INTO push_engagement_reports (push_id, app_id, due_at)
                    SELECT DISTINCT push_id, \(appID)::uuid, now() + \(Self.reportInterval.wholeMilliseconds) * interval '1 millisecond'
                    FROM new
                    WHERE EXISTS (SELECT 1 FROM webhook_endpoints w
                                  WHERE w.app_id = \(appID) AND w.enabled AND 'push.engagement' = ANY(w.event_types))
                    ORDER BY 1
                    ON CONFLICT (push_id) DO NOTHING
                ), per_device AS (
                    -- engagement.batch (opt-in): the events counted now, one webhook event a push.
                    -- Only when an endpoint of the app wants the type (checked once), so that an
                    -- app without one builds no JSON. A SELECT in a WITH runs only when read: the
                    -- final SELECT counts its rows.
                    SELECT herald_webhook_event(\(appID), 'engagement.batch', jsonb_build_object(
                        'push_id', push_id,
                        'events', jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
                            'registration_id', device_id, 'type', type, 'action', NULLIF(action, ''),
                            'text_input', CASE WHEN type = 'action' THEN text_input END,
                            'occurred_at', occurred_at)) ORDER BY device_id, type, action)))
                    FROM new
                    WHERE EXISTS (SELECT 1 FROM webhook_endpoints w
                                  WHERE w.app_id = \(appID) AND w.enabled AND 'engagement.batch' = ANY(w.event_types))
                    GROUP BY push_id
                )
                SELECT (SELECT count(*)::int FROM new), (SELECT count(*)::int FROM per_device)
                """, logger: logger)
            for try await (counted, _) in rows.decode((Int, Int).self) { return .recorded(counted: counted) }
            return .recorded(counted: 0)
        }
    }

    /// Push `pushID`'s counts: the sum of its at most ``shards`` rows.
    public func counts(pushID: UUID) async throws -> EngagementCounts {
        let rows = try await client.boundedQuery(
            """
            SELECT COALESCE(sum(received), 0)::bigint, COALESCE(sum(opened), 0)::bigint,
                   COALESCE(sum(dismissed), 0)::bigint, herald_sum_counts(actions)::text
            FROM push_engagement_counts WHERE push_id = \(pushID)
            """, logger: logger)
        for try await (received, opened, dismissed, actions) in rows.decode((Int64, Int64, Int64, String?).self) {
            let decoded = try actions.map { try JSONDecoder().decode([String: Int64].self, from: Data($0.utf8)) } ?? [:]
            return EngagementCounts(received: received, opened: opened, dismissed: dismissed, actions: decoded)
        }
        return EngagementCounts()
    }

    /// An A/B test's counts by variant (its index in the push's split): the sum of each variant's
    /// rows.
    public func countsByVariant(pushID: UUID) async throws -> [Int: EngagementCounts] {
        let rows = try await client.boundedQuery(
            """
            SELECT variant, sum(received)::bigint, sum(opened)::bigint, sum(dismissed)::bigint,
                   herald_sum_counts(actions)::text
            FROM push_engagement_counts WHERE push_id = \(pushID) AND variant >= 0 GROUP BY variant
            """, logger: logger)
        var counts: [Int: EngagementCounts] = [:]
        for try await (variant, received, opened, dismissed, actions)
            in rows.decode((Int16, Int64, Int64, Int64, String?).self)
        {
            let decoded = try actions.map { try JSONDecoder().decode([String: Int64].self, from: Data($0.utf8)) } ?? [:]
            counts[Int(variant)] = EngagementCounts(
                received: received, opened: opened, dismissed: dismissed, actions: decoded)
        }
        return counts
    }

    /// A push's `push.engagement` webhook event comes at most this often while phones report.
    public static let reportInterval: Duration = .seconds(60)

    /// Rows a push's counts are spread over, so that batches reporting one broadcast at once do
    /// not queue for one row's lock: each batch adds to one row of each push it names, picked at
    /// random (a batch about 100 devices once added to every row by device id, and concurrent
    /// batches waited on each other: 65 requests/s under `make bench-events`).
    static let shards = 16

    /// Action identifiers a push's counts name; past them, actions count under `(other)`.
    static let namedActions = 20
}
