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
    /// "Sent to that device" is read from the push's batches: the devices APNs accepted or the
    /// gateway delivered once a batch's outcome is back, and while a batch is still on its way
    /// every device of its range (a phone may report a push before its sender's outcome arrives).
    public func record(_ reports: [EngagementReport], appID: UUID) async throws -> Recording {
        guard !reports.isEmpty else { return .recorded(counted: 0) }
        let pushIDs = reports.map(\.pushID)
        let tokens = reports.map { ByteBuffer(bytes: $0.token) }
        return try await client.transaction(logger: logger) { connection in
            let checked = try await connection.run(
                """
                SELECT e.i::int, p.id IS NOT NULL, d.id,
                       COALESCE((SELECT bool_or(b.completed_at IS NULL OR d.id = ANY(b.accepted_device_ids)
                                                OR d.id = ANY(b.delivered_online_device_ids))
                                 FROM (SELECT * FROM push_batches b
                                       WHERE b.push_id = p.id AND b.last_device >= d.id
                                       ORDER BY b.last_device LIMIT \(Self.batchesAhead)) b
                                 WHERE b.first_device <= d.id), false)
                FROM unnest(\(pushIDs)::uuid[], \(tokens)::bytea[]) WITH ORDINALITY AS e(push_id, token, i)
                LEFT JOIN pushes p ON p.id = e.push_id AND p.app_id = \(appID)
                LEFT JOIN devices d ON d.app_id = \(appID) AND d.token = e.token
                ORDER BY e.i
                """, logger: logger)
            var deviceIDs: [Int64] = []
            deviceIDs.reserveCapacity(reports.count)
            for try await (position, pushFound, deviceID, sent) in checked.decode((Int, Bool, Int64?, Bool).self) {
                let index = position - 1
                guard pushFound else { return .refused(.unknownPush(index: index)) }
                guard let deviceID else { return .refused(.unknownDevice(index: index)) }
                guard sent else { return .refused(.notSent(index: index)) }
                deviceIDs.append(deviceID)
            }
            let rows = try await connection.run(
                """
                WITH new AS (
                    INSERT INTO push_engagement_events (push_id, device_id, type, action, text_input, occurred_at)
                    SELECT * FROM unnest(\(pushIDs)::uuid[], \(deviceIDs)::bigint[], \(reports.map(\.type.rawValue))::text[],
                                         \(reports.map(\.action))::text[], \(reports.map(\.textInput))::boolean[],
                                         \(reports.map(\.occurredAt))::timestamptz[])
                    ON CONFLICT DO NOTHING
                    RETURNING push_id, device_id, type, action
                ), per_action AS (
                    SELECT push_id, type, action, count(*) AS n FROM new GROUP BY 1, 2, 3
                ), per_shard AS (
                    SELECT push_id, \(Int.random(in: 0..<Self.shards))::smallint AS shard,
                           COALESCE(sum(n) FILTER (WHERE type = 'received'), 0) AS received,
                           COALESCE(sum(n) FILTER (WHERE type = 'opened'), 0) AS opened,
                           COALESCE(sum(n) FILTER (WHERE type = 'dismissed'), 0) AS dismissed,
                           COALESCE(jsonb_object_agg(action, n) FILTER (WHERE type = 'action'), '{}') AS actions
                    FROM per_action GROUP BY 1
                ), kept AS (
                    -- In push order, so that two batches about the same pushes lock their rows in
                    -- the same order and never wait on each other in a circle.
                    INSERT INTO push_engagement_counts AS c (push_id, shard, received, opened, dismissed, actions)
                    SELECT * FROM per_shard ORDER BY push_id
                    ON CONFLICT (push_id, shard) DO UPDATE SET
                        received = c.received + excluded.received, opened = c.opened + excluded.opened,
                        dismissed = c.dismissed + excluded.dismissed,
                        actions = herald_add_counts(c.actions, excluded.actions)
                )
                SELECT count(*)::int FROM new
                """, logger: logger)
            for try await counted in rows.decode(Int.self) { return .recorded(counted: counted) }
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

    /// Rows a push's counts are spread over, so that batches reporting one broadcast at once do
    /// not queue for one row's lock: each batch adds to one row of each push it names, picked at
    /// random (a batch about 100 devices once added to every row by device id, and concurrent
    /// batches waited on each other: 65 requests/s under `make bench-events`).
    static let shards = 16

    /// The batches ending at or after a device that are read to find the one holding it: one per
    /// series of batches (a local-time push has one per wave, at most 40 UTC offsets), with room.
    static let batchesAhead = 64
}
