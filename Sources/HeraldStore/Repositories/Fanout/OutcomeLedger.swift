import Foundation
import HeraldAPNsVocabulary
import HeraldDomain
import HeraldTiming
import Logging
import PostgresNIO

/// The outcome ledger: what the senders report for each job batch, counted once into the push's
/// counters, failures recorded per device, dead tokens invalidated (the token rule), webhooks'
/// delivery events, and pushes completed when their last batch is counted.
public struct OutcomeLedger: Sendable {
    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Counts the outcomes of job batches, in one transaction: each batch is marked complete (with
    /// the devices that accepted it, for a recall) — a batch counted before is skipped, so a
    /// redelivered outcome changes nothing; then each push's counters get one update for all its
    /// batches, failures are recorded per device, dead tokens are invalidated (410 only if the
    /// device did not register again after APNs' timestamp), and pushes whose every batch is
    /// complete are marked completed.
    ///
    /// The pushes' rows are locked first (in id order, as every accounting transaction does): the
    /// fan-out's end (``FanoutProgressRepository/finishFanout(pushID:by:)``) also locks the row before it looks for
    /// unfinished batches, so one of the two always sees the other's work. Without it, the last
    /// outcomes counted while the fan-out ended could each see the other not done yet, and the
    /// push stayed `sending` with every batch complete.
    public func applyOutcomes(_ outcomes: [BatchOutcome]) async throws -> AppliedOutcomes {
        guard !outcomes.isEmpty else { return AppliedOutcomes() }
        return try await client.transaction(logger: logger) { connection in
            let locked = try await connection.run(
                """
                SELECT id FROM pushes WHERE id = ANY(\(Array(Set(outcomes.map(\.pushID))))) ORDER BY id FOR NO KEY UPDATE
                """, logger: logger)
            for try await _ in locked.decode(UUID.self) {}
            var applied = AppliedOutcomes()
            var deltas: [UUID: PushCounters] = [:]
            var variantDeltas: [VariantKey: VariantCounters] = [:]
            var failed: [FailedTarget] = []
            var counted: [(pushID: UUID, sequence: Int32)] = []
            let batches = try await Self.completeBatches(outcomes, on: connection, logger: logger)
            for (position, outcome) in outcomes.enumerated() {
                guard let batch = batches[position] else {
                    applied.batchesIgnored += 1
                    continue
                }
                let sequence = Int32(outcome.sequence)
                let targetCount = batch.targetCount
                applied.batchesCounted += 1
                counted.append((outcome.pushID, sequence))
                var delta = deltas[outcome.pushID] ?? PushCounters()
                // An A/B test's batch: its share of the delta goes to its variant too (a copy only
                // then: the copy's dictionaries would be copied again as the delta changes).
                let before = batch.variant == nil ? nil : delta
                let reported =
                    outcome.acceptedDeviceIDs.count + outcome.deliveredOnlineDeviceIDs.count
                    + outcome.offlineDeviceIDs.count + outcome.failures.count
                // A batch rebuilt after devices changed may hold fewer or more than first recorded:
                // the outcome is the truth, so the counters keep adding up.
                delta.targeted += Int64(reported) - Int64(targetCount)
                delta.accepted += Int64(outcome.acceptedDeviceIDs.count)
                delta.deliveredOnline += Int64(outcome.deliveredOnlineDeviceIDs.count)
                if !outcome.offlineDeviceIDs.isEmpty {
                    delta.skipped += Int64(outcome.offlineDeviceIDs.count)
                    delta.skippedByReason[SkipReason.offline.rawValue, default: 0] += Int64(
                        outcome.offlineDeviceIDs.count)
                }
                for failure in outcome.failures {
                    switch failure.status {
                    case .rejected:
                        delta.rejected += 1
                        delta.rejectedByReason[failure.reason.isEmpty ? "Unknown" : failure.reason, default: 0] += 1
                    case .expired: delta.expired += 1
                    case .canceled: delta.canceled += 1
                    }
                    failed.append(
                        FailedTarget(
                            pushID: outcome.pushID, appID: batch.appID,
                            batchDevices: batch.first...max(batch.first, batch.last),
                            failure: failure))
                }
                deltas[outcome.pushID] = delta
                if let variant = batch.variant, let before {
                    let key = VariantKey(pushID: outcome.pushID, variant: variant)
                    variantDeltas[key, default: VariantCounters(variant: variant)].add(delta, minus: before)
                }
                applied.notificationsCounted += reported
            }
            if !failed.isEmpty {
                try await connection.run(
                    """
                    INSERT INTO failed_deliveries (push_id, device_id, status, reason, http_status, attempts)
                    SELECT * FROM unnest(\(failed.map(\.pushID))::uuid[], \(failed.map(\.failure.deviceID))::bigint[],
                                         \(failed.map(\.failure.status.rawValue))::text[], \(failed.map(\.failure.reason))::text[],
                                         \(failed.map { Int16(clamping: $0.failure.httpStatus) })::smallint[],
                                         \(failed.map { Int16(clamping: $0.failure.attempts) })::smallint[])
                    ON CONFLICT DO NOTHING
                    """, logger: logger)
                for (pushID, count) in try await Self.invalidateTokens(failed, on: connection, logger: logger) {
                    deltas[pushID, default: PushCounters()].tokensInvalidated += count
                    applied.tokensInvalidated += Int(count)
                }
                try await Self.reportCredentialRefusals(failed, on: connection, logger: logger)
            }
            try await Self.reportDeliveryBatches(counted, on: connection, logger: logger)
            for (pushID, delta) in deltas {
                try await PushRepository.addToCounters(pushID: pushID, delta, on: connection, logger: logger)
            }
            try await Self.addToVariantCounters(variantDeltas, on: connection, logger: logger)
            applied.pushesCompleted = try await Self.completeIfDone(Array(deltas.keys), on: connection, logger: logger)
            return applied
        }
    }

    /// A device an outcome reports as not reached, with the batch it was reported for.
    struct FailedTarget {
        var pushID: UUID
        /// The push's app (from the database, not from the outcome record).
        var appID: UUID
        /// The device ids the batch was cut from.
        var batchDevices: ClosedRange<Int64>
        var failure: BatchOutcome.Failure
    }

    /// Marks the batch of each of `outcomes` completed, with its accepted devices, in one
    /// statement (one per outcome was a round trip and a fresh plan each, per 500 notifications).
    /// Returns, at each outcome's position, what its batch recorded — or nil when the outcome
    /// counts for nothing: no such batch (a sequence past Int32 included), a batch already
    /// completed, or a second outcome of the same batch in `outcomes`.
    static func completeBatches(_ outcomes: [BatchOutcome], on connection: PostgresConnection, logger: Logger)
        async throws -> [CompletedBatch?]
    {
        var positions: [Int32] = []
        var pushIDs: [UUID] = []
        var sequences: [Int32] = []
        // Every outcome's accepted devices one after another; each outcome's are the slice from
        // its first to its last (1-based, as PostgreSQL's arrays; an empty slice when first > last).
        var accepted: [Int64] = []
        var firsts: [Int32] = []
        var lasts: [Int32] = []
        // The same for the devices reached online.
        var online: [Int64] = []
        var onlineFirsts: [Int32] = []
        var onlineLasts: [Int32] = []
        for (position, outcome) in outcomes.enumerated() {
            // No batch has a sequence past Int32 (the column's type): such an outcome is no batch's.
            guard let sequence = Int32(exactly: outcome.sequence) else { continue }
            positions.append(Int32(position))
            pushIDs.append(outcome.pushID)
            sequences.append(sequence)
            firsts.append(Int32(accepted.count + 1))
            accepted.append(contentsOf: outcome.acceptedDeviceIDs)
            lasts.append(Int32(accepted.count))
            onlineFirsts.append(Int32(online.count + 1))
            online.append(contentsOf: outcome.deliveredOnlineDeviceIDs)
            onlineLasts.append(Int32(online.count))
        }
        var batches = [CompletedBatch?](repeating: nil, count: outcomes.count)
        guard !positions.isEmpty else { return batches }
        let rows = try await connection.execute(
            CompleteBatchesStatement(
                positions: positions, pushIDs: pushIDs, sequences: sequences, accepted: accepted, firsts: firsts,
                lasts: lasts, online: online, onlineFirsts: onlineFirsts, onlineLasts: onlineLasts), logger: logger)
        // When one batch has two outcomes here, PostgreSQL completes it once, from one of them:
        // the one it names is counted, the other ignored.
        for try await (position, targetCount, first, last, appID, variant) in rows {
            batches[Int(position)] = CompletedBatch(
                targetCount: targetCount, first: first, last: last, appID: appID, variant: variant.map(Int.init))
        }
        return batches
    }

    /// A variant of an A/B test's push.
    struct VariantKey: Hashable {
        var pushID: UUID
        var variant: Int
    }

    /// Adds the outcomes of A/B tests' batches to their variants' counters (migration 0035), in
    /// key order so that two transactions never wait on each other in a circle.
    static func addToVariantCounters(
        _ deltas: [VariantKey: VariantCounters], on connection: PostgresConnection, logger: Logger
    ) async throws {
        guard !deltas.isEmpty else { return }
        let rows = deltas.sorted {
            ($0.key.pushID.uuidString, $0.key.variant) < ($1.key.pushID.uuidString, $1.key.variant)
        }
        try await connection.run(
            """
            UPDATE push_variant_counters v SET targeted = v.targeted + d.targeted, accepted = v.accepted + d.accepted,
                delivered_online = v.delivered_online + d.delivered_online, rejected = v.rejected + d.rejected,
                expired = v.expired + d.expired, canceled = v.canceled + d.canceled, skipped = v.skipped + d.skipped
            FROM unnest(\(rows.map(\.key.pushID))::uuid[], \(rows.map { Int16($0.key.variant) })::int2[],
                        \(rows.map(\.value.targeted))::int8[], \(rows.map(\.value.accepted))::int8[],
                        \(rows.map(\.value.deliveredOnline))::int8[], \(rows.map(\.value.rejected))::int8[],
                        \(rows.map(\.value.expired))::int8[], \(rows.map(\.value.canceled))::int8[],
                        \(rows.map(\.value.skipped))::int8[])
                 AS d(push_id, variant, targeted, accepted, delivered_online, rejected, expired, canceled, skipped)
            WHERE v.push_id = d.push_id AND v.variant = d.variant
            """, logger: logger)
    }

    /// What a batch completed by ``completeBatches(_:on:logger:)`` was recorded with.
    struct CompletedBatch {
        var targetCount: Int32
        var first: Int64
        var last: Int64
        var appID: UUID
        /// An A/B test's batch: its variant.
        var variant: Int?
    }

    /// Invalidates the tokens the failures prove dead — only of devices of the push's own app that
    /// lie in the batch they were reported for (an outcome record cannot invalidate another app's
    /// devices) — and writes a `device.invalidated` webhook event for each, in the same statement.
    /// A 410 with APNs' timestamp spares a device that registered again after it. Returns the
    /// number invalidated per push.
    static func invalidateTokens(_ failed: [FailedTarget], on connection: PostgresConnection, logger: Logger)
        async throws -> [UUID: Int64]
    {
        let dead = failed.filter { $0.failure.invalidatesToken && $0.batchDevices.contains($0.failure.deviceID) }
        guard !dead.isEmpty else { return [:] }
        var pushOfDevice: [Int64: UUID] = [:]
        for entry in dead { pushOfDevice[entry.failure.deviceID] = entry.pushID }
        // `invalidated` is an UPDATE, so PostgreSQL runs it whether or not anything reads it;
        // `events` is a SELECT whose work is a side effect (herald_webhook_event inserts the
        // event and its deliveries), and a SELECT in WITH runs only as far as something reads
        // it. The final WHERE reads all of it — `count(*) >= 0` is always true — so every event
        // is written before the invalidated ids are returned, in this one statement.
        let rows = try await connection.run(
            """
            WITH invalidated AS (
                UPDATE devices d SET status = 'invalid', invalidated_at = now(), invalid_reason = u.reason, updated_at = now()
                FROM unnest(\(dead.map(\.failure.deviceID))::bigint[], \(dead.map(\.failure.reason))::text[],
                            \(dead.map { $0.failure.unregisteredAt != nil })::boolean[],
                            \(dead.map { $0.failure.unregisteredAt ?? Date(timeIntervalSince1970: 0) })::timestamptz[],
                            \(dead.map(\.appID))::uuid[]) AS u(id, reason, dated, unregistered_at, app_id)
                WHERE d.id = u.id AND d.app_id = u.app_id AND d.status = 'active'
                  AND (NOT u.dated OR d.registered_at <= u.unregistered_at)
                RETURNING d.id, d.app_id, d.token, d.alias, d.environment, d.topic, d.invalidated_at, u.reason,
                          CASE WHEN u.dated THEN u.unregistered_at END AS apns_timestamp
            ), events AS (
                SELECT herald_webhook_event(i.app_id, 'device.invalidated', jsonb_strip_nulls(jsonb_build_object(
                    'registration_id', i.id, 'token_prefix', encode(substring(i.token FROM 1 FOR 4), 'hex'), 'alias', i.alias,
                    'environment', i.environment, 'topic', i.topic, 'reason', i.reason,
                    'apns_timestamp', to_char(i.apns_timestamp AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                    'invalidated_at', to_char(i.invalidated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))))
                FROM invalidated i
                WHERE EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.app_id = i.app_id AND w.enabled
                              AND 'device.invalidated' = ANY(w.event_types))
            )
            SELECT id FROM invalidated WHERE (SELECT count(*) FROM events) >= 0
            """, logger: logger)
        var invalidated: [UUID: Int64] = [:]
        for try await id in rows.decode(Int64.self) {
            if let push = pushOfDevice[id] { invalidated[push, default: 0] += 1 }
        }
        return invalidated
    }

    /// Writes `push.failed` for each push whose outcomes report that APNs refused the app's
    /// credential (``BatchOutcome/Failure/refusesCredential``): once per push, at the first such
    /// batch, with the reason and how many of the batch it refused.
    static func reportCredentialRefusals(
        _ failed: [FailedTarget], on connection: PostgresConnection, logger: Logger
    ) async throws {
        var refused: [UUID: (appID: UUID, reason: String, status: Int, count: Int)] = [:]
        for entry in failed where entry.failure.refusesCredential {
            refused[entry.pushID, default: (entry.appID, entry.failure.reason, entry.failure.httpStatus, 0)].count += 1
        }
        guard !refused.isEmpty else { return }
        let pushes = Array(refused.keys)
        try await connection.run(
            """
            SELECT herald_webhook_push_failed(u.app_id, jsonb_build_object(
                'push_id', u.push_id, 'reason', u.reason, 'http_status', u.status, 'refused', u.refused,
                'message', 'APNs refused the app''s credential (' || u.reason || '): upload a valid key or certificate, then send again'))
            FROM unnest(\(pushes)::uuid[], \(pushes.map { refused[$0]!.appID })::uuid[],
                        \(pushes.map { refused[$0]!.reason })::text[], \(pushes.map { Int32(clamping: refused[$0]!.status) })::integer[],
                        \(pushes.map { Int64(refused[$0]!.count) })::bigint[]) AS u(push_id, app_id, reason, status, refused)
            """, logger: logger)
    }

    /// Writes a `delivery.batch` event for each batch counted now whose app has an endpoint
    /// subscribed: the registration ids APNs accepted and those it did not, with status and reason.
    static func reportDeliveryBatches(
        _ batches: [(pushID: UUID, sequence: Int32)], on connection: PostgresConnection, logger: Logger
    ) async throws {
        guard !batches.isEmpty else { return }
        let rows = try await connection.execute(
            DeliveryBatchEventsStatement(pushIDs: batches.map(\.pushID), sequences: batches.map(\.sequence)),
            logger: logger)
        for try await _ in rows {}
    }

    /// Marks completed those of `pushIDs` whose fan-out finished and whose every batch has its
    /// outcome (a canceled push keeps its state and gets its completion time). Returns them.
    static func completeIfDone(_ pushIDs: [UUID], on connection: PostgresConnection, logger: Logger) async throws
        -> [UUID]
    {
        guard !pushIDs.isEmpty else { return [] }
        var completed: [UUID] = []
        for try await id in try await connection.execute(CompleteIfDoneStatement(pushIDs: pushIDs), logger: logger) {
            completed.append(id)
        }
        return completed
    }
}

/// ``OutcomeLedger/completeBatches(_:on:logger:)``'s statement: each row of the arrays is one
/// outcome (its position in the caller's list, push, sequence, and the slice of `accepted` that
/// holds its accepted devices). Prepared, so a connection plans it once.
struct CompleteBatchesStatement: PostgresPreparedStatement {
    typealias Row = (Int32, Int32, Int64, Int64, UUID, Int16?)
    static let sql = """
        UPDATE push_batches b SET completed_at = now(), accepted_device_ids = ($4::bigint[])[o.first_accepted:o.last_accepted],
            delivered_online_device_ids = ($7::bigint[])[o.first_online:o.last_online]
        FROM unnest($1::int4[], $2::uuid[], $3::int4[], $5::int4[], $6::int4[], $8::int4[], $9::int4[])
                 AS o(position, push_id, sequence, first_accepted, last_accepted, first_online, last_online),
             pushes p
        WHERE b.push_id = o.push_id AND b.sequence = o.sequence AND b.completed_at IS NULL AND p.id = b.push_id
        RETURNING o.position, b.target_count, b.first_device, b.last_device, p.app_id, b.variant
        """

    let positions: [Int32]
    let pushIDs: [UUID]
    let sequences: [Int32]
    let accepted: [Int64]
    let firsts: [Int32]
    let lasts: [Int32]
    let online: [Int64]
    let onlineFirsts: [Int32]
    let onlineLasts: [Int32]

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 9)
        bindings.append(positions)
        bindings.append(pushIDs)
        bindings.append(sequences)
        bindings.append(accepted)
        bindings.append(firsts)
        bindings.append(lasts)
        bindings.append(online)
        bindings.append(onlineFirsts)
        bindings.append(onlineLasts)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        try row.decode(Row.self)
    }
}

/// ``OutcomeLedger/reportDeliveryBatches(_:on:logger:)``'s statement: a `delivery.batch`
/// webhook event for each completed batch whose app has an endpoint for it. Prepared (every
/// outcome transaction runs it).
struct DeliveryBatchEventsStatement: PostgresPreparedStatement {
    typealias Row = Void
    static let sql = """
        SELECT herald_webhook_event(p.app_id, 'delivery.batch', jsonb_build_object(
            'push_id', b.push_id, 'batch', b.sequence,
            'accepted', to_jsonb(COALESCE(b.accepted_device_ids, '{}'::bigint[])),
            'delivered_online', to_jsonb(COALESCE(b.delivered_online_device_ids, '{}'::bigint[])),
            'failed', COALESCE((
                SELECT jsonb_agg(jsonb_build_object('registration_id', f.device_id, 'status', f.status, 'reason', f.reason)
                                 ORDER BY f.device_id)
                FROM failed_deliveries f
                WHERE f.push_id = b.push_id AND f.device_id BETWEEN b.first_device AND b.last_device), '[]'::jsonb)))
        FROM unnest($1::uuid[], $2::integer[]) AS u(push_id, sequence)
        JOIN push_batches b ON b.push_id = u.push_id AND b.sequence = u.sequence
        JOIN pushes p ON p.id = b.push_id
        WHERE EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.app_id = p.app_id AND w.enabled
                      AND 'delivery.batch' = ANY(w.event_types))
        """

    let pushIDs: [UUID]
    let sequences: [Int32]

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 2)
        bindings.append(pushIDs)
        bindings.append(sequences)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws {}
}

/// ``OutcomeLedger/completeIfDone(_:on:logger:)``'s statement, prepared (every outcome
/// transaction runs it).
struct CompleteIfDoneStatement: PostgresPreparedStatement {
    typealias Row = UUID
    static let sql = """
        UPDATE pushes p SET state = CASE WHEN p.state = 'sending' THEN 'completed' ELSE p.state END, completed_at = now()
        WHERE p.id = ANY($1::uuid[]) AND p.state IN ('sending', 'canceled') AND p.fanout_finished_at IS NOT NULL
          AND p.completed_at IS NULL
          AND NOT EXISTS (SELECT 1 FROM push_batches b WHERE b.push_id = p.id AND b.completed_at IS NULL)
        RETURNING p.id
        """

    let pushIDs: [UUID]

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 1)
        bindings.append(pushIDs)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> UUID {
        try row.decode(UUID.self)
    }
}
