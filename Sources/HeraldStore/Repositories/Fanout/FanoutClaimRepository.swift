import Foundation
import HeraldAPNsVocabulary
import HeraldDomain
import HeraldTiming
import Logging
import PostgresNIO

/// Who fans out which push: the claim a center takes on a push (one center per push however many
/// run), its lease, renewal and release, the fan-out lanes, and pause and resume.
///
/// Every write that could race with another center happens under the push row's lock and
/// re-checks who holds the claim, so one push is fanned out once however many centers run.
public struct FanoutClaimRepository: Sendable {
    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

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

    /// Picks variant `variant` as the winner of push `pushID`, an A/B test in winner mode whose
    /// winner is not picked yet; a push waiting for the pick falls due now. Returns false when the
    /// push is not the app's, not in winner mode, finished, or its winner was picked already.
    public func pickWinner(_ variant: Int, pushID: UUID, appID: UUID, audit: AuditEntry? = nil) async throws -> Bool {
        let rows = try await client.audited(
            """
            UPDATE pushes SET split = jsonb_set(split, '{winner}', to_jsonb(\(variant))),
                scheduled_at = CASE WHEN state = 'scheduled' AND wave = 1 THEN LEAST(scheduled_at, now())
                                    ELSE scheduled_at END
            WHERE id = \(pushID) AND app_id = \(appID) AND state IN ('scheduled', 'accepted', 'fanning_out')
              AND split ? 'sample' AND NOT split ? 'winner'
            RETURNING id
            """, audit, logger: logger)
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
}
