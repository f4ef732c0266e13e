import Foundation
import HeraldDomain
import PostgresNIO

/// A push sent in waves (docs/local-time.md): its plan, made once by the center that first claims
/// it, and the moves between waves. Between two waves the push is `scheduled` again, at the next
/// wave's instant, with its claim (and the center's slot) given back.
extension FanoutProgressRepository {
    /// The push's waves in order; empty until planned.
    public func waves(pushID: UUID) async throws -> [PushWave] {
        let rows = try await client.boundedQuery(
            """
            SELECT wave, due_at, time_zones, devices, first_sequence FROM push_waves
            WHERE push_id = \(pushID) ORDER BY wave
            """, logger: logger)
        var waves: [PushWave] = []
        for try await (index, due, zones, devices, first) in rows.decode((Int32, Date, [String], Int64, Int32?).self) {
            waves.append(
                PushWave(
                    index: Int(index), dueAt: due, timeZones: zones, devices: devices,
                    firstSequence: first.map(Int.init)))
        }
        return waves
    }

    /// Stores `waves` as the plan of push `pushID`, claimed by `center`, with their devices as its
    /// audience size — unless it has a plan already (then that one is returned: a plan is made once).
    /// - Returns: the push's plan; nil when `center` no longer holds the push.
    public func planWaves(pushID: UUID, by center: String, waves: [PushWave]) async throws -> [PushWave]? {
        let stored: Bool? = try await client.transaction(logger: logger) { connection in
            let rows = try await connection.run(
                """
                SELECT waves FROM pushes WHERE id = \(pushID) AND state = 'fanning_out' AND claimed_by = \(center)
                FOR UPDATE
                """, logger: logger)
            var found: Int32?? = .none
            for try await planned in rows.decode(Int32?.self) { found = .some(planned) }
            guard case .some(let planned) = found else { return nil }
            guard planned == nil else { return false }
            for wave in waves {
                try await connection.run(
                    """
                    INSERT INTO push_waves (push_id, wave, due_at, time_zones, devices)
                    VALUES (\(pushID), \(Int32(wave.index)), \(wave.dueAt), \(wave.timeZones), \(wave.devices))
                    """, logger: logger)
            }
            try await connection.run(
                """
                UPDATE pushes SET waves = \(Int32(waves.count)), wave = 0,
                    audience_size = COALESCE(audience_size, \(waves.reduce(0) { $0 + $1.devices }))
                WHERE id = \(pushID)
                """, logger: logger)
            return true
        }
        guard stored != nil else { return nil }
        return try await self.waves(pushID: pushID)
    }

    /// Notes the sequence of wave `wave`'s first batch, the first time it starts.
    public func startWave(pushID: UUID, wave: Int, firstSequence: Int) async throws {
        try await client.boundedQuery(
            """
            UPDATE push_waves SET first_sequence = COALESCE(first_sequence, \(Int32(firstSequence)))
            WHERE push_id = \(pushID) AND wave = \(Int32(wave))
            """, logger: logger)
    }

    /// Puts push `pushID` (claimed by `center`) back to `scheduled` until `dueAt`, at wave `wave`
    /// with its cursor at the audience's start: its claim and slot are given back, and a center
    /// claims it again when the wave falls due. Returns whether `center` still held it.
    @discardableResult
    public func awaitWave(_ wave: Int, dueAt: Date, pushID: UUID, by center: String) async throws -> Bool {
        let rows = try await client.boundedQuery(
            """
            UPDATE pushes SET state = 'scheduled',
                -- An A/B test whose winner the operator picked while its sample went out: due now.
                scheduled_at = CASE WHEN split ? 'winner' THEN now() ELSE \(dueAt) END, wave = \(Int32(wave)),
                fanout_cursor = CASE WHEN wave = \(Int32(wave)) THEN fanout_cursor ELSE 0 END,
                claimed_by = NULL, claimed_at = NULL, eta_at = NULL
            WHERE id = \(pushID) AND state = 'fanning_out' AND claimed_by = \(center)
            RETURNING id
            """, logger: logger)
        for try await _ in rows.decode(UUID.self) { return true }
        return false
    }
}

// MARK: A/B tests in winner mode

extension FanoutProgressRepository {
    /// Starts the second phase of push `pushID`, an A/B test in winner mode claimed by `center`:
    /// the winner is the operator's pick, else the variant with the best open rate among the
    /// sample's devices reached (``PushSplit/bestVariant(reached:opened:)``); the second phase's
    /// batches start after those recorded so far. Returns the split as stored now, or nil when
    /// `center` no longer holds the push.
    public func startSecondPhase(pushID: UUID, by center: String) async throws -> PushSplit? {
        try await client.transaction(logger: logger) { connection in
            let rows = try await connection.run(
                """
                SELECT split::text, batches_emitted FROM pushes
                WHERE id = \(pushID) AND state = 'fanning_out' AND claimed_by = \(center) FOR UPDATE
                """, logger: logger)
            var found: (split: String?, emitted: Int32)?
            for try await row in rows.decode((String?, Int32).self) { found = row }
            guard let found, var split = PushSplit(json: found.split) else { return nil }
            if split.secondPhaseFrom != nil, split.winner != nil { return split }
            if split.winner == nil {
                var reached = [Int64](repeating: 0, count: split.variants.count)
                var opened = [Int64](repeating: 0, count: split.variants.count)
                let counters = try await connection.run(
                    """
                    SELECT variant, accepted + delivered_online FROM push_variant_counters WHERE push_id = \(pushID)
                    """, logger: logger)
                for try await (variant, count) in counters.decode((Int16, Int64).self)
                where reached.indices.contains(Int(variant)) {
                    reached[Int(variant)] = count
                }
                let opens = try await connection.run(
                    """
                    SELECT variant, sum(opened)::int8 FROM push_engagement_counts
                    WHERE push_id = \(pushID) AND variant >= 0 GROUP BY variant
                    """, logger: logger)
                for try await (variant, count) in opens.decode((Int16, Int64).self)
                where opened.indices.contains(Int(variant)) {
                    opened[Int(variant)] = count
                }
                split.winner = PushSplit.bestVariant(reached: reached, opened: opened)
            }
            split.secondPhaseFrom = Int(found.emitted)
            try await connection.run(
                "UPDATE pushes SET split = \(split.json)::jsonb WHERE id = \(pushID)", logger: logger)
            return split
        }
    }
}
