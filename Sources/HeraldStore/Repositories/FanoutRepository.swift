import Foundation
import HeraldAPNsVocabulary
import HeraldDomain
import HeraldTiming
import Logging
import PostgresNIO

/// herald-center's side of a push: claiming its fan-out, recording the batches it was cut into,
/// pausing and canceling, re-driving batches without outcome, and counting outcomes.
///
/// Every write that could race with another center happens under the push row's lock and
/// re-checks who holds the claim, so one push is fanned out once however many centers run.
public struct FanoutRepository: Sendable {
    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    // MARK: Claims

    /// Which of a center's fan-out slots a push takes (docs/operations.md#fan-out-lanes): `paced`
    /// for a throttled push or a recall (it spends most of its life waiting), `express` for a list
    /// audience (registration ids or aliases: at most 1,000 ids and 1,000 aliases of 100 devices,
    /// usually a handful), `bulk` for everything else. A lane's slots are its own, so a campaign
    /// never keeps a one-device push waiting for a slot, nor a throttled campaign a broadcast.
    static let laneSQL = """
        CASE WHEN throttle_per_second IS NOT NULL OR finish_within_s IS NOT NULL OR recall_of IS NOT NULL THEN 'paced'
             WHEN audience ? 'registration_ids' OR audience ? 'aliases' THEN 'express'
             ELSE 'bulk' END
        """

    /// Pushes a center may claim now, at most `limits[lane]` of each lane: accepted ones,
    /// scheduled ones that fell due, and fan-outs whose center stopped renewing its claim —
    /// none paused. Fair across apps: each lane is ordered by each app's turn (its oldest push
    /// first, then every other app's oldest, then each app's second…), then by age, so one app's
    /// hundred campaigns do not keep another app's one waiting. Read without locks;
    /// ``claim(_:by:lease:)`` decides.
    public func claimCandidates(lease: Duration, limits: [FanoutLane: Int]) async throws -> [ClaimCandidate] {
        var binds = PostgresBindings()
        binds.append(lease.wholeMilliseconds)
        var lanes: [String] = []
        for lane in FanoutLane.allCases {
            let limit = limits[lane] ?? 0
            guard limit > 0 else { continue }
            binds.append(lane.rawValue)
            let name = binds.count
            binds.append(Int64(limit))
            lanes.append("(SELECT id, lane FROM turns WHERE lane = $\(name) ORDER BY turn, since LIMIT $\(name + 1))")
        }
        guard !lanes.isEmpty else { return [] }
        let rows = try await client.boundedQuery(
            PostgresQuery(
                unsafeSQL: """
                    WITH claimable AS (
                        SELECT id, app_id, created_at AS since, \(Self.laneSQL) AS lane
                        FROM pushes WHERE state = 'accepted' AND paused_at IS NULL
                        UNION ALL
                        SELECT id, app_id, scheduled_at, \(Self.laneSQL)
                        FROM pushes WHERE state = 'scheduled' AND scheduled_at <= now() AND paused_at IS NULL
                        UNION ALL
                        SELECT id, app_id, claimed_at, \(Self.laneSQL)
                        FROM pushes WHERE state = 'fanning_out' AND paused_at IS NULL
                            AND (claimed_at IS NULL OR claimed_at < now() - $1 * interval '1 millisecond')
                    ), turns AS (
                        SELECT id, lane, since, row_number() OVER (PARTITION BY app_id, lane ORDER BY since) AS turn
                        FROM claimable
                    )
                    \(lanes.joined(separator: " UNION ALL "))
                    """, binds: binds), logger: logger)
        var candidates: [ClaimCandidate] = []
        for try await (id, lane) in rows.decode((UUID, String).self) {
            candidates.append(ClaimCandidate(id: id, lane: FanoutLane(rawValue: lane) ?? .bulk))
        }
        return candidates
    }

    /// The lanes of `pushIDs` (those that exist).
    public func lanes(of pushIDs: [UUID]) async throws -> [ClaimCandidate] {
        guard !pushIDs.isEmpty else { return [] }
        var binds = PostgresBindings()
        binds.append(pushIDs)
        let rows = try await client.boundedQuery(
            PostgresQuery(unsafeSQL: "SELECT id, \(Self.laneSQL) FROM pushes WHERE id = ANY($1)", binds: binds),
            logger: logger)
        var candidates: [ClaimCandidate] = []
        for try await (id, lane) in rows.decode((UUID, String).self) {
            candidates.append(ClaimCandidate(id: id, lane: FanoutLane(rawValue: lane) ?? .bulk))
        }
        return candidates
    }

    /// Claims the fan-out of those of `pushIDs` that are claimable (accepted, scheduled and due,
    /// or held by a center whose claim is older than `lease`; not paused) and not locked by another center
    /// claiming them right now. The claim must be renewed (every recorded page renews it) within
    /// `lease`, or another center takes the push over.
    /// - Returns: the pushes claimed, now `fanning_out`.
    public func claim(_ pushIDs: [UUID], by center: String, lease: Duration) async throws -> [Push] {
        guard !pushIDs.isEmpty else { return [] }
        let claimable = """
            (paused_at IS NULL AND (state = 'accepted' OR (state = 'scheduled' AND scheduled_at <= now())
             OR (state = 'fanning_out' AND (claimed_at IS NULL OR claimed_at < now() - $3 * interval '1 millisecond'))))
            """
        var binds = PostgresBindings()
        binds.append(pushIDs)
        binds.append(center)
        binds.append(lease.wholeMilliseconds)
        let rows = try await client.boundedQuery(
            PostgresQuery(
                unsafeSQL: """
                    UPDATE pushes SET state = 'fanning_out', claimed_by = $2, claimed_at = now(),
                                      fanout_started_at = COALESCE(fanout_started_at, now())
                    WHERE id IN (SELECT id FROM pushes WHERE id = ANY($1) AND \(claimable) FOR UPDATE SKIP LOCKED)
                      AND \(claimable)
                    RETURNING \(PushRepository.pushColumns)
                    """, binds: binds), logger: logger)
        return try await PushRepository.pushes(from: rows)
    }

    /// State, pause and claim of a push, read before each page (and each paced batch).
    public func control(pushID: UUID) async throws -> PushControl? {
        let rows = try await client.boundedQuery(
            "SELECT state, paused_at IS NOT NULL, claimed_by FROM pushes WHERE id = \(pushID)", logger: logger)
        for try await (state, paused, claimedBy) in rows.decode((String, Bool, String?).self) {
            return PushControl(state: PushState(rawValue: state) ?? .accepted, paused: paused, claimedBy: claimedBy)
        }
        return nil
    }

    /// Whether push `pushID` is completed (every target has its final outcome).
    public func isCompleted(pushID: UUID) async throws -> Bool {
        let rows = try await client.boundedQuery(
            "SELECT completed_at IS NOT NULL FROM pushes WHERE id = \(pushID)", logger: logger)
        for try await completed in rows.decode(Bool.self) { return completed }
        return true
    }

    /// The push `id`, whatever its app (for the center, which works for every app).
    public func push(id: UUID) async throws -> Push? {
        let rows = try await client.boundedQuery(
            "SELECT \(unescaped: PushRepository.pushColumns) FROM pushes WHERE id = \(id)", logger: logger)
        return try await PushRepository.pushes(from: rows).first
    }

    /// Gives a claim up (a center shutting down), so another center takes the fan-out over at
    /// once instead of after the lease.
    public func releaseClaim(pushID: UUID, by center: String) async throws {
        try await client.boundedQuery(
            """
            UPDATE pushes SET claimed_at = NULL, claimed_by = NULL
            WHERE id = \(pushID) AND claimed_by = \(center) AND state = 'fanning_out'
            """, logger: logger)
    }

    /// Renews a claim (while a fan-out waits: paused or paced). Returns whether `center` still holds it.
    public func renewClaim(pushID: UUID, by center: String) async throws -> Bool {
        let rows = try await client.boundedQuery(
            """
            UPDATE pushes SET claimed_at = now() WHERE id = \(pushID) AND claimed_by = \(center) AND state = 'fanning_out'
            RETURNING id
            """, logger: logger)
        for try await _ in rows.decode(UUID.self) { return true }
        return false
    }

    /// Pauses (`true`) or resumes a push's fan-out, with `audit` appended. Returns whether the push
    /// exists and is not finished.
    @discardableResult
    public func setPaused(_ paused: Bool, pushID: UUID, appID: UUID, audit: AuditEntry? = nil) async throws -> Bool {
        let rows = try await client.audited(
            """
            UPDATE pushes SET paused_at = CASE WHEN \(paused) THEN COALESCE(paused_at, now()) ELSE NULL END
            WHERE id = \(pushID) AND app_id = \(appID) AND state IN ('scheduled', 'accepted', 'fanning_out') RETURNING id
            """, audit, logger: logger)
        for try await _ in rows.decode(UUID.self) { return true }
        return false
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

    // MARK: Pages and batches

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
        skipped: [SkipReason: Int64] = [:], targets: TargetBitmap? = nil
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
            if !batches.isEmpty {
                let inserted = try await connection.run(
                    """
                    INSERT INTO push_batches (push_id, sequence, first_device, last_device, target_count, environment, topic)
                    SELECT \(pushID), * FROM unnest(\(batches.map { Int32($0.sequence) })::integer[],
                        \(batches.map(\.firstDevice))::bigint[], \(batches.map(\.lastDevice))::bigint[],
                        \(batches.map { Int32($0.targetCount) })::integer[], \(batches.map(\.environment.rawValue))::text[],
                        \(batches.map(\.topic))::text[])
                    ON CONFLICT DO NOTHING RETURNING target_count
                    """, logger: logger)
                for try await count in inserted.decode(Int32.self) { added += Int64(count) }
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

    /// Produced batches still without an outcome `after` they were last produced, oldest first.
    public func batchesWithoutOutcome(after: Duration, limit: Int) async throws -> [RecordedBatch] {
        let rows = try await client.boundedQuery(
            """
            SELECT \(unescaped: Self.batchColumns) FROM push_batches
            WHERE completed_at IS NULL AND produced_at IS NOT NULL
              AND emitted_at < now() - \(after.wholeMilliseconds) * interval '1 millisecond'
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
            if finished { _ = try await Self.completeIfDone([pushID], on: connection, logger: logger) }
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
            return try await Self.completeIfDone(settled, on: connection, logger: logger)
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
                SELECT app_id, audience::text, recall_of, fanout_cursor, wave FROM pushes
                WHERE id = \(pushID) AND state = 'canceled' AND fanout_finished_at IS NULL
                  AND (claimed_by IS NULL OR claimed_by = \(center)
                       OR claimed_at < now() - \(lease.wholeMilliseconds) * interval '1 millisecond')
                FOR UPDATE
                """, logger: logger)
            var found: (appID: UUID, audience: String, recallOf: UUID?, cursor: Int64, wave: Int32)?
            for try await row in rows.decode((UUID, String, UUID?, Int64, Int32).self) { found = row }
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
            for part in parts {
                selection.timeZones = part.timeZones
                let counted = try await connection.run(
                    AudienceRepository.countQuery(selection, after: part.after), logger: logger)
                for try await count in counted.decode(Int64.self) { remainder += count }
            }
            var unsent: Int64 = 0
            if unsentBatches {
                // Recorded (so already targeted) and never produced: nobody will send them now.
                let ended = try await connection.run(
                    """
                    WITH ended AS (
                        UPDATE push_batches SET completed_at = now()
                        WHERE push_id = \(pushID) AND produced_at IS NULL AND completed_at IS NULL
                        RETURNING target_count
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
            _ = try await Self.completeIfDone([pushID], on: connection, logger: logger)
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

    // MARK: Outcomes

    /// Counts the outcomes of job batches, in one transaction: each batch is marked complete (with
    /// the devices that accepted it, for a recall) — a batch counted before is skipped, so a
    /// redelivered outcome changes nothing; then each push's counters get one update for all its
    /// batches, failures are recorded per device, dead tokens are invalidated (410 only if the
    /// device did not register again after APNs' timestamp), and pushes whose every batch is
    /// complete are marked completed.
    ///
    /// The pushes' rows are locked first (in id order, as every accounting transaction does): the
    /// fan-out's end (``finishFanout(pushID:by:)``) also locks the row before it looks for
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
                let reported = outcome.acceptedDeviceIDs.count + outcome.failures.count
                // A batch rebuilt after devices changed may hold fewer or more than first recorded:
                // the outcome is the truth, so the counters keep adding up.
                delta.targeted += Int64(reported) - Int64(targetCount)
                delta.accepted += Int64(outcome.acceptedDeviceIDs.count)
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
        for (position, outcome) in outcomes.enumerated() {
            // No batch has a sequence past Int32 (the column's type): such an outcome is no batch's.
            guard let sequence = Int32(exactly: outcome.sequence) else { continue }
            positions.append(Int32(position))
            pushIDs.append(outcome.pushID)
            sequences.append(sequence)
            firsts.append(Int32(accepted.count + 1))
            accepted.append(contentsOf: outcome.acceptedDeviceIDs)
            lasts.append(Int32(accepted.count))
        }
        var batches = [CompletedBatch?](repeating: nil, count: outcomes.count)
        guard !positions.isEmpty else { return batches }
        let rows = try await connection.execute(
            CompleteBatchesStatement(
                positions: positions, pushIDs: pushIDs, sequences: sequences, accepted: accepted, firsts: firsts,
                lasts: lasts), logger: logger)
        // When one batch has two outcomes here, PostgreSQL completes it once, from one of them:
        // the one it names is counted, the other ignored.
        for try await (position, targetCount, first, last, appID) in rows {
            batches[Int(position)] = CompletedBatch(targetCount: targetCount, first: first, last: last, appID: appID)
        }
        return batches
    }

    /// What a batch completed by ``completeBatches(_:on:logger:)`` was recorded with.
    struct CompletedBatch {
        var targetCount: Int32
        var first: Int64
        var last: Int64
        var appID: UUID
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

    /// The gauges that describe the whole system, for the one center holding the reporter lease
    /// (`system_reporter`): taken, or renewed, by `center` for `lease` when it is free, expired or
    /// already its own. Nil when another center holds it.
    public func systemGauges(center: String, lease: Duration) async throws -> SystemGauges? {
        let rows = try await client.boundedQuery(
            """
            WITH elected AS (
                INSERT INTO system_reporter (id, holder, expires_at)
                VALUES (1, \(center), now() + make_interval(secs => \(Double(lease.wholeMilliseconds) / 1000)))
                ON CONFLICT (id) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
                    WHERE system_reporter.holder = excluded.holder OR system_reporter.expires_at < now()
                RETURNING holder
            ), unfinished AS (
                SELECT count(*) FILTER (WHERE state = 'accepted') AS accepted,
                       count(*) FILTER (WHERE state = 'fanning_out') AS fanning_out,
                       count(*) FILTER (WHERE state = 'sending') AS sending,
                       COALESCE(EXTRACT(EPOCH FROM now() - min(created_at)), 0)::float8 AS oldest
                FROM pushes WHERE state IN ('accepted', 'fanning_out', 'sending')
            ), unpublished AS (
                SELECT count(*) AS backlog, COALESCE(EXTRACT(EPOCH FROM now() - min(created_at)), 0)::float8 AS oldest
                FROM outbox WHERE published_at IS NULL
            )
            SELECT (SELECT count(*) FROM elected), (SELECT count(*) FROM pushes WHERE state = 'scheduled'),
                   u.accepted, u.fanning_out, u.sending, u.oldest, o.backlog, o.oldest
            FROM unfinished u, unpublished o
            """, logger: logger)
        var gauges: SystemGauges?
        for try await (elected, scheduled, accepted, fanningOut, sending, oldestPush, backlog, oldestRecord)
            in rows.decode((Int64, Int64, Int64, Int64, Int64, Double, Int64, Double).self)
        {
            guard elected > 0 else { return nil }
            gauges = SystemGauges(
                pushesByState: [
                    "scheduled": scheduled, "accepted": accepted, "fanning_out": fanningOut, "sending": sending,
                ],
                oldestUnfinishedPushAge: oldestPush, outboxBacklog: backlog, oldestOutboxRecordAge: oldestRecord)
        }
        guard var gauges else { return nil }
        // Connections of Herald's processes, by what they are doing (PostgreSQL's own view: every
        // process's pool, in use or idle, and the audience streams).
        let connections = try await client.boundedQuery(
            """
            SELECT application_name, COALESCE(state, 'unknown'), count(*) FROM pg_stat_activity
            WHERE datname = current_database() AND application_name = ANY(\(SystemGauges.applications))
            GROUP BY 1, 2
            """, logger: logger)
        for try await (application, state, count) in connections.decode((String, String, Int64).self) {
            gauges.connections[SystemGauges.Connections(application: application, state: state)] = count
        }
        let server = try await client.boundedQuery(
            """
            SELECT (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'),
                   current_setting('max_connections')::int8,
                   (SELECT count(*) FROM apps WHERE legacy_client_access OR NOT identity_verification)
            """, logger: logger)
        for try await (count, maximum, legacy) in server.decode((Int64, Int64, Int64).self) {
            gauges.serverConnections = count
            gauges.maximumConnections = maximum
            gauges.appsInLegacyMode = legacy
        }
        let certificates = try await client.boundedQuery(
            """
            SELECT app_id, environment, EXTRACT(EPOCH FROM certificate_expires_at)::float8 FROM apns_credentials
            WHERE kind = 'certificate' AND certificate_expires_at IS NOT NULL
            ORDER BY app_id, environment
            """, logger: logger)
        for try await (appID, environment, expiresAt) in certificates.decode((UUID, String, Double).self) {
            gauges.certificateExpiries.append(.init(appID: appID, environment: environment, expiresAt: expiresAt))
        }
        return gauges
    }

    // MARK: Helpers

    static let batchColumns =
        "push_id, sequence, first_device, last_device, target_count, environment, topic, redriven"

    static func batches(from rows: ReadRows) async throws -> [RecordedBatch] {
        var batches: [RecordedBatch] = []
        for try await (pushID, sequence, first, last, count, environment, topic, redriven)
            in rows.decode((UUID, Int32, Int64, Int64, Int32, String, String, Int32).self)
        {
            batches.append(
                RecordedBatch(
                    pushID: pushID, sequence: Int(sequence), firstDevice: first, lastDevice: last,
                    targetCount: Int(count), environment: APNsEnvironment(rawValue: environment) ?? .production,
                    topic: topic, redriven: Int(redriven)))
        }
        return batches
    }
}

/// ``FanoutRepository/completeBatches(_:on:logger:)``'s statement: each row of the arrays is one
/// outcome (its position in the caller's list, push, sequence, and the slice of `accepted` that
/// holds its accepted devices). Prepared, so a connection plans it once.
struct CompleteBatchesStatement: PostgresPreparedStatement {
    typealias Row = (Int32, Int32, Int64, Int64, UUID)
    static let sql = """
        UPDATE push_batches b SET completed_at = now(), accepted_device_ids = ($4::bigint[])[o.first_accepted:o.last_accepted]
        FROM unnest($1::int4[], $2::uuid[], $3::int4[], $5::int4[], $6::int4[])
                 AS o(position, push_id, sequence, first_accepted, last_accepted),
             pushes p
        WHERE b.push_id = o.push_id AND b.sequence = o.sequence AND b.completed_at IS NULL AND p.id = b.push_id
        RETURNING o.position, b.target_count, b.first_device, b.last_device, p.app_id
        """

    let positions: [Int32]
    let pushIDs: [UUID]
    let sequences: [Int32]
    let accepted: [Int64]
    let firsts: [Int32]
    let lasts: [Int32]

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 6)
        bindings.append(positions)
        bindings.append(pushIDs)
        bindings.append(sequences)
        bindings.append(accepted)
        bindings.append(firsts)
        bindings.append(lasts)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        try row.decode(Row.self)
    }
}

/// ``FanoutRepository/reportDeliveryBatches(_:on:logger:)``'s statement: a `delivery.batch`
/// webhook event for each completed batch whose app has an endpoint for it. Prepared (every
/// outcome transaction runs it).
struct DeliveryBatchEventsStatement: PostgresPreparedStatement {
    typealias Row = Void
    static let sql = """
        SELECT herald_webhook_event(p.app_id, 'delivery.batch', jsonb_build_object(
            'push_id', b.push_id, 'batch', b.sequence,
            'accepted', to_jsonb(COALESCE(b.accepted_device_ids, '{}'::bigint[])),
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

/// ``FanoutRepository/completeIfDone(_:on:logger:)``'s statement, prepared (every outcome
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
