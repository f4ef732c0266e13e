import Foundation
import HeraldAPNsVocabulary
import HeraldDomain
import HeraldTiming
import Logging
import PostgresNIO

/// How far a claimed push's fan-out has come: the pages recorded as job batches with the cursor,
/// the batches produced to Kafka, the targets kept for the frequency cap and rebuilds, re-driven
/// batches, the plan (audience size, end of emission), waves (FanoutProgressRepository+Waves),
/// and the fan-out's end — finished, settled, or canceled with its remainder counted.
public struct FanoutProgressRepository: Sendable {
    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Stores the audience size (the first time: a fan-out claimed again after a pause or a
    /// takeover keeps the whole audience's, not what is left) and the planned end of emission of
    /// a paced fan-out.
    public func setPlan(pushID: UUID, audienceSize: Int64?, etaAt: Date?) async throws {
        try await client.boundedQuery(
            """
            UPDATE pushes SET audience_size = COALESCE(audience_size, \(audienceSize)), eta_at = \(etaAt)
            WHERE id = \(pushID)
            """, logger: logger)
    }

    /// Records the batches cut from one page, moves the fan-out cursor to `cursor` and renews the
    /// claim, in one transaction under the push's row lock; says whether the push is paused, so
    /// an unthrottled fan-out needs no other look-up per page. Record first, produce second: a batch
    /// recorded here is produced by this center or, if it dies first, by whoever resumes the
    /// fan-out (``unproducedBatches(pushID:)``). A batch recorded before is left as it was.
    /// - Parameters:
    ///   - skipped: devices of the page the app's delivery policy left out, by reason: added to
    ///     `targeted` and `skipped` with the cursor, so a resumed fan-out never counts them twice.
    ///   - targets: the devices of the page put into `batches`, stored for the app's frequency
    ///     cap and for rebuilding a batch (``targets(pushID:from:through:)``).
    public func recordPage(
        pushID: UUID, by center: String, cursor: Int64, batches: [RecordedBatch],
        skipped: [SkipReason: Int64] = [:], targets: TargetBitmap? = nil, variantsSkipped: [Int: Int64] = [:]
    ) async throws
        -> PageRecording
    {
        try await client.transaction(logger: logger) { connection in
            let rows = try await connection.run(
                "SELECT state, claimed_by, paused_at IS NOT NULL FROM pushes WHERE id = \(pushID) FOR UPDATE",
                logger: logger)
            var control: (state: String, claimedBy: String?, paused: Bool)?
            for try await row in rows.decode((String, String?, Bool).self) { control = row }
            guard let control else { return .claimLost }
            if control.state == PushState.canceled.rawValue { return .canceled }
            guard control.state == PushState.fanningOut.rawValue, control.claimedBy == center else { return .claimLost }
            var added: Int64 = 0
            // An A/B test's variants: devices targeted (in batches, or left out by the policy) and
            // skipped, by variant.
            var variants: [Int: VariantCounters] = [:]
            for (variant, count) in variantsSkipped {
                variants[variant, default: VariantCounters(variant: variant)].targeted += count
                variants[variant, default: VariantCounters(variant: variant)].skipped += count
            }
            if !batches.isEmpty {
                let inserted = try await connection.run(
                    """
                    INSERT INTO push_batches (push_id, sequence, first_device, last_device, target_count, environment, topic,
                                              variant)
                    SELECT \(pushID), s, f, l, c, e, t, NULLIF(v, -1)
                    FROM unnest(\(batches.map { Int32($0.sequence) })::integer[],
                        \(batches.map(\.firstDevice))::bigint[], \(batches.map(\.lastDevice))::bigint[],
                        \(batches.map { Int32($0.targetCount) })::integer[], \(batches.map(\.environment.rawValue))::text[],
                        \(batches.map(\.topic))::text[], \(batches.map { Int16($0.variant ?? -1) })::int2[])
                        AS u(s, f, l, c, e, t, v)
                    ON CONFLICT DO NOTHING RETURNING target_count, variant
                    """, logger: logger)
                for try await (count, variant) in inserted.decode((Int32, Int16?).self) {
                    added += Int64(count)
                    if let variant {
                        variants[Int(variant), default: VariantCounters(variant: Int(variant))].targeted += Int64(count)
                    }
                }
            }
            if !variants.isEmpty {
                let rows = variants.values.sorted { $0.variant < $1.variant }
                try await connection.run(
                    """
                    INSERT INTO push_variant_counters AS v (push_id, variant, targeted, skipped)
                    SELECT \(pushID), * FROM unnest(\(rows.map { Int16($0.variant) })::int2[],
                                                    \(rows.map(\.targeted))::int8[], \(rows.map(\.skipped))::int8[])
                    ON CONFLICT (push_id, variant) DO UPDATE SET targeted = v.targeted + excluded.targeted,
                                                                 skipped = v.skipped + excluded.skipped
                    """, logger: logger)
            }
            let emitted = Int32((batches.map(\.sequence).max() ?? -1) + 1)
            try await connection.run(
                """
                UPDATE pushes SET fanout_cursor = GREATEST(fanout_cursor, \(cursor)),
                                  batches_emitted = GREATEST(batches_emitted, \(emitted)), claimed_at = now()
                WHERE id = \(pushID)
                """, logger: logger)
            if added > 0 {
                try await connection.run(
                    "UPDATE push_counters SET targeted = targeted + \(added), updated_at = now() WHERE push_id = \(pushID)",
                    logger: logger)
            }
            let skippedTotal = skipped.values.reduce(0, +)
            if skippedTotal > 0 {
                let reasons = try String(
                    decoding: JSONEncoder().encode(
                        Dictionary(uniqueKeysWithValues: skipped.map { ($0.key.rawValue, $0.value) })),
                    as: UTF8.self)
                try await connection.run(
                    """
                    UPDATE push_counters SET targeted = targeted + \(skippedTotal), skipped = skipped + \(skippedTotal),
                        skipped_by_reason = herald_add_counts(skipped_by_reason, \(reasons)::jsonb), updated_at = now()
                    WHERE push_id = \(pushID)
                    """, logger: logger)
            }
            if let targets {
                try await connection.run(
                    """
                    INSERT INTO push_targets (push_id, app_id, wave, first_device, last_device, bits)
                    SELECT id, app_id, wave, \(targets.firstDevice), \(targets.lastDevice), \(ByteBuffer(bytes: targets.bits))
                    FROM pushes WHERE id = \(pushID)
                    ON CONFLICT (push_id, wave, first_device) DO NOTHING
                    """, logger: logger)
            }
            return .recorded(paused: control.paused)
        }
    }

    /// The devices push `pushID` put into batches, in the pages overlapping `first...last`.
    public func targets(pushID: UUID, from first: Int64, through last: Int64) async throws -> [TargetBitmap] {
        try await Self.bitmaps(
            client.boundedQuery(
                """
                SELECT first_device, last_device, bits FROM push_targets
                WHERE push_id = \(pushID) AND first_device <= \(last) AND last_device >= \(first)
                """, logger: logger))
    }

    /// The devices the app's other campaigns put into batches since `since`, in the pages
    /// overlapping `first...last`: a device's count toward the frequency cap is the number of them
    /// holding it.
    public func campaignTargets(
        appID: UUID, excluding pushID: UUID, since: Date, from first: Int64, through last: Int64
    ) async throws -> [TargetBitmap] {
        try await Self.bitmaps(
            client.boundedQuery(
                """
                SELECT first_device, last_device, bits FROM push_targets
                WHERE app_id = \(appID) AND targeted_at > \(since) AND last_device >= \(first)
                  AND first_device <= \(last) AND push_id <> \(pushID)
                """, logger: logger))
    }

    private static func bitmaps(_ rows: ReadRows) async throws -> [TargetBitmap] {
        var bitmaps: [TargetBitmap] = []
        for try await (first, last, bits) in rows.decode((Int64, Int64, ByteBuffer).self) {
            bitmaps.append(TargetBitmap(firstDevice: first, lastDevice: last, bits: bits.bytes))
        }
        return bitmaps
    }

    /// The app's delivery policy (quiet hours, frequency cap); nil when it has none.
    public func deliveryPolicy(appID: UUID) async throws -> DeliveryPolicy? {
        let rows = try await client.boundedQuery(
            "SELECT delivery_policy::text FROM apps WHERE id = \(appID)", logger: logger)
        for try await json in rows.decode(String?.self) { return DeliveryPolicy(json: json) }
        return nil
    }

    /// Notes that the broker acknowledged these batches.
    public func markProduced(pushID: UUID, sequences: [Int]) async throws {
        guard !sequences.isEmpty else { return }
        try await client.boundedQuery(
            """
            UPDATE push_batches SET produced_at = now()
            WHERE push_id = \(pushID) AND sequence = ANY(\(sequences.map { Int32($0) })) AND produced_at IS NULL
            """, logger: logger)
    }

    /// Batches recorded but never acknowledged by the broker (their center died in between).
    public func unproducedBatches(pushID: UUID) async throws -> [RecordedBatch] {
        let rows = try await client.boundedQuery(
            """
            SELECT \(unescaped: Self.batchColumns) FROM push_batches
            WHERE push_id = \(pushID) AND produced_at IS NULL AND completed_at IS NULL ORDER BY sequence
            """, logger: logger)
        return try await Self.batches(from: rows)
    }

    /// Produced batches still without an outcome `after` they were last produced, oldest first —
    /// leaving out those a sender noted as being sent within `after` (it holds the batch and
    /// notes it every third of its takeover time: re-driven, its copy would only be refused).
    public func batchesWithoutOutcome(after: Duration, limit: Int) async throws -> [RecordedBatch] {
        let rows = try await client.boundedQuery(
            """
            SELECT \(unescaped: Self.batchColumns) FROM push_batches
            WHERE completed_at IS NULL AND produced_at IS NOT NULL
              AND emitted_at < now() - \(after.wholeMilliseconds) * interval '1 millisecond'
              AND (sending_since IS NULL OR sending_since < now() - \(after.wholeMilliseconds) * interval '1 millisecond')
            ORDER BY emitted_at LIMIT \(limit)
            """, logger: logger)
        return try await Self.batches(from: rows)
    }

    /// Notes that a batch was produced again. Returns false when its outcome arrived meanwhile.
    @discardableResult
    public func markRedriven(pushID: UUID, sequence: Int) async throws -> Bool {
        let rows = try await client.boundedQuery(
            """
            UPDATE push_batches SET emitted_at = now(), redriven = redriven + 1
            WHERE push_id = \(pushID) AND sequence = \(Int32(sequence)) AND completed_at IS NULL RETURNING sequence
            """, logger: logger)
        for try await _ in rows.decode(Int32.self) { return true }
        return false
    }

    /// How many of push `pushID`'s targets are in batches but have no outcome counted yet: its
    /// `targeted` less every outcome (the counter identity's other side). One row of
    /// `push_counters`, so a fan-out can ask before every page (``CenterSettings/fanoutWindow``).
    public func targetsWithoutOutcome(pushID: UUID) async throws -> Int64 {
        let rows = try await client.boundedQuery(
            """
            SELECT targeted - (accepted + delivered_online + rejected + expired + canceled + skipped)
            FROM push_counters WHERE push_id = \(pushID)
            """, logger: logger)
        for try await count in rows.decode(Int64.self) { return count }
        return 0
    }

    /// Ends a fan-out that reached the end of its audience: the push is `sending` (or
    /// `completed` when every batch already has its outcome, or it had none) and the claim is
    /// released. Returns false when `center` no longer holds it.
    public func finishFanout(pushID: UUID, by center: String) async throws -> Bool {
        let finished = try await client.transaction(logger: logger) { connection in
            let rows = try await connection.run(
                """
                UPDATE pushes SET state = 'sending', fanout_finished_at = now(), claimed_by = NULL, eta_at = NULL
                WHERE id = \(pushID) AND state = 'fanning_out' AND claimed_by = \(center) RETURNING id
                """, logger: logger)
            var finished = false
            for try await _ in rows.decode(UUID.self) { finished = true }
            if finished { _ = try await OutcomeLedger.completeIfDone([pushID], on: connection, logger: logger) }
            return finished
        }
        return finished
    }

    /// Completes the pushes whose fan-out ended more than `after` ago and whose every batch is
    /// complete, yet which are still `sending` — a state no accounting should leave behind (see
    /// ``applyOutcomes(_:)``); a safety net swept now and then, so such a push never waits forever.
    /// - Returns: the pushes completed.
    public func completeSettled(after: Duration, limit: Int) async throws -> [UUID] {
        try await client.transaction(logger: logger) { connection in
            let rows = try await connection.run(
                """
                SELECT p.id FROM pushes p
                WHERE p.state = 'sending' AND p.completed_at IS NULL
                  AND p.fanout_finished_at < now() - \(after.wholeMilliseconds) * interval '1 millisecond'
                  AND NOT EXISTS (SELECT 1 FROM push_batches b WHERE b.push_id = p.id AND b.completed_at IS NULL)
                LIMIT \(limit)
                """, logger: logger)
            var settled: [UUID] = []
            for try await id in rows.decode(UUID.self) { settled.append(id) }
            return try await OutcomeLedger.completeIfDone(settled, on: connection, logger: logger)
        }
    }

    /// Counts what a canceled push never sent: the devices of its audience past its fan-out
    /// cursor are added to `targeted` and `canceled`, once. Done by the center holding the
    /// fan-out (`center`), or by any center when nobody holds it or its claim is older than `lease`.
    /// - Parameter unsentBatches: also end the batches it recorded but never produced, every
    ///   target canceled — for a push nobody is fanning out (paused and released, or its center
    ///   gone); the fan-out holding a push accounts its own.
    /// - Returns: the devices counted, or nil when there was nothing to do (not canceled, already
    ///   counted, or another center holds it).
    public func accountCanceledRemainder(
        pushID: UUID, by center: String, lease: Duration, unsentBatches: Bool = false
    ) async throws -> Int64? {
        try await client.transaction(logger: logger) { connection in
            let rows = try await connection.run(
                """
                SELECT app_id, audience::text, recall_of, fanout_cursor, wave, split::text FROM pushes
                WHERE id = \(pushID) AND state = 'canceled' AND fanout_finished_at IS NULL
                  AND (claimed_by IS NULL OR claimed_by = \(center)
                       OR claimed_at < now() - \(lease.wholeMilliseconds) * interval '1 millisecond')
                FOR UPDATE
                """, logger: logger)
            var found: (appID: UUID, audience: String, recallOf: UUID?, cursor: Int64, wave: Int32, split: String?)?
            for try await row in rows.decode((UUID, String, UUID?, Int64, Int32, String?).self) { found = row }
            guard let found else { return nil }
            var selection = AudienceSelection(
                appID: found.appID, audience: (try? PushAudience(json: found.audience)) ?? PushAudience(),
                acceptedByPush: found.recallOf)
            // A push in waves: what is left of its wave, and every later wave's devices.
            let waveRows = try await connection.run(
                """
                SELECT wave, time_zones FROM push_waves WHERE push_id = \(pushID) AND wave >= \(found.wave) ORDER BY wave
                """, logger: logger)
            var waves: [(timeZones: [String]?, after: Int64)] = []
            for try await (wave, zones) in waveRows.decode((Int32, [String]).self) {
                waves.append((zones, wave == found.wave ? found.cursor : 0))
            }
            let parts = waves.isEmpty ? [(timeZones: nil, after: found.cursor)] : waves
            var remainder: Int64 = 0
            if let split = PushSplit(json: found.split), split.picksWinner {
                // An A/B test in winner mode: what was never counted is the sample's devices past
                // the cursor while the sample goes out, and the rest's devices (past the cursor, once
                // the rest goes out) — told apart by the hash, device by device.
                let ids = try await connection.run(AudienceRepository.idQuery(selection, after: 0), logger: logger)
                for try await id in ids.decode(Int64.self) {
                    let phase = split.phase(pushID: pushID, deviceID: id)
                    let counted = found.wave == 0 ? phase == 0 && id <= found.cursor : phase == 0 || id <= found.cursor
                    if !counted { remainder += 1 }
                }
            } else {
                for part in parts {
                    selection.timeZones = part.timeZones
                    let counted = try await connection.run(
                        AudienceRepository.countQuery(selection, after: part.after), logger: logger)
                    for try await count in counted.decode(Int64.self) { remainder += count }
                }
            }
            var unsent: Int64 = 0
            if unsentBatches {
                // Recorded (so already targeted) and never produced: nobody will send them now.
                let ended = try await connection.run(
                    """
                    WITH ended AS (
                        UPDATE push_batches SET completed_at = now()
                        WHERE push_id = \(pushID) AND produced_at IS NULL AND completed_at IS NULL
                        RETURNING target_count, variant
                    ), per_variant AS (
                        SELECT variant, sum(target_count) AS n FROM ended WHERE variant IS NOT NULL GROUP BY variant
                    ), variants AS (
                        UPDATE push_variant_counters v SET canceled = v.canceled + per_variant.n
                        FROM per_variant WHERE v.push_id = \(pushID) AND v.variant = per_variant.variant
                    )
                    SELECT COALESCE(sum(target_count), 0)::int8 FROM ended
                    """, logger: logger)
                for try await count in ended.decode(Int64.self) { unsent = count }
            }
            try await connection.run(
                """
                UPDATE push_counters SET targeted = targeted + \(remainder), canceled = canceled + \(remainder + unsent),
                    updated_at = now()
                WHERE push_id = \(pushID)
                """, logger: logger)
            try await connection.run(
                """
                UPDATE pushes SET fanout_finished_at = now(), claimed_by = NULL, eta_at = NULL WHERE id = \(pushID)
                """, logger: logger)
            _ = try await OutcomeLedger.completeIfDone([pushID], on: connection, logger: logger)
            return remainder + unsent
        }
    }

    /// Canceled pushes whose remainder nobody counted yet and nobody holds (or whose holder's
    /// claim is older than `lease`).
    public func canceledUnaccounted(lease: Duration, limit: Int) async throws -> [UUID] {
        let rows = try await client.boundedQuery(
            """
            SELECT id FROM pushes WHERE state = 'canceled' AND fanout_finished_at IS NULL
              AND (claimed_by IS NULL OR claimed_at < now() - \(lease.wholeMilliseconds) * interval '1 millisecond')
            ORDER BY canceled_at LIMIT \(limit)
            """, logger: logger)
        var ids: [UUID] = []
        for try await id in rows.decode(UUID.self) { ids.append(id) }
        return ids
    }

    /// Whether push `pushID` is completed (every target has its final outcome).
    public func isCompleted(pushID: UUID) async throws -> Bool {
        let rows = try await client.boundedQuery(
            "SELECT completed_at IS NOT NULL FROM pushes WHERE id = \(pushID)", logger: logger)
        for try await completed in rows.decode(Bool.self) { return completed }
        return true
    }

    static let batchColumns =
        "push_id, sequence, first_device, last_device, target_count, environment, topic, redriven, variant"

    static func batches(from rows: ReadRows) async throws -> [RecordedBatch] {
        var batches: [RecordedBatch] = []
        for try await (pushID, sequence, first, last, count, environment, topic, redriven, variant)
            in rows.decode((UUID, Int32, Int64, Int64, Int32, String, String, Int32, Int16?).self)
        {
            var batch = RecordedBatch(
                pushID: pushID, sequence: Int(sequence), firstDevice: first, lastDevice: last,
                targetCount: Int(count), environment: APNsEnvironment(rawValue: environment) ?? .production,
                topic: topic, redriven: Int(redriven))
            batch.variant = variant.map(Int.init)
            batches.append(batch)
        }
        return batches
    }
}
