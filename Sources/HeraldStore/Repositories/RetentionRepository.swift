import Foundation
import Logging
import PostgresNIO

/// What keeps PostgreSQL from growing with every push ever sent: finished pushes older than the
/// retention window go, their numbers kept per app and day (`push_statistics_daily`) so that the
/// statistics users read stay what they were.
public struct RetentionRepository: Sendable {
    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Deletes up to about `limit` finished (completed or canceled) pushes created more than
    /// `retention` ago, with their counters, batches and failed deliveries, in one statement that
    /// first adds their numbers to the per-day aggregate. A recall goes with the push it recalls,
    /// and a push whose recall is still running or recent stays. Running pushes always stay.
    /// - Returns: how many pushes were deleted.
    @discardableResult
    public func purgePushes(olderThan retention: Duration, limit: Int) async throws -> Int {
        let cutoffMilliseconds = retention.wholeMilliseconds
        let rows = try await client.boundedQuery(
            """
            WITH cutoff AS (
                SELECT now() - \(cutoffMilliseconds) * interval '1 millisecond' AS at
            ), originals AS (
                SELECT p.id FROM pushes p, cutoff
                WHERE p.state IN ('completed', 'canceled') AND p.created_at < cutoff.at AND p.recall_of IS NULL
                  AND NOT EXISTS (
                      SELECT 1 FROM pushes r WHERE r.recall_of = p.id
                        AND (r.state NOT IN ('completed', 'canceled') OR r.created_at >= cutoff.at))
                ORDER BY p.created_at LIMIT \(limit)
                FOR UPDATE OF p SKIP LOCKED
            ), doomed AS (
                SELECT id FROM originals
                UNION ALL
                SELECT r.id FROM pushes r JOIN originals o ON r.recall_of = o.id
            ), aggregated AS (
                INSERT INTO push_statistics_daily AS d (app_id, day, state, pushes, targeted, accepted, rejected,
                                                        expired, canceled, tokens_invalidated, rejected_by_reason,
                                                        skipped, skipped_by_reason, delivered_online, received, opened)
                SELECT p.app_id, (p.created_at AT TIME ZONE 'UTC')::date, p.state, count(*),
                       COALESCE(sum(c.targeted), 0), COALESCE(sum(c.accepted), 0), COALESCE(sum(c.rejected), 0),
                       COALESCE(sum(c.expired), 0), COALESCE(sum(c.canceled), 0),
                       COALESCE(sum(c.tokens_invalidated), 0), herald_sum_counts(COALESCE(c.rejected_by_reason, '{}')),
                       COALESCE(sum(c.skipped), 0), herald_sum_counts(COALESCE(c.skipped_by_reason, '{}')),
                       COALESCE(sum(c.delivered_online), 0), COALESCE(sum(e.received), 0), COALESCE(sum(e.opened), 0)
                FROM pushes p JOIN doomed USING (id) LEFT JOIN push_counters c ON c.push_id = p.id
                LEFT JOIN (SELECT push_id, sum(received) AS received, sum(opened) AS opened FROM push_engagement_counts
                           WHERE push_id IN (SELECT id FROM doomed) GROUP BY push_id) e ON e.push_id = p.id
                GROUP BY p.app_id, (p.created_at AT TIME ZONE 'UTC')::date, p.state
                ON CONFLICT (app_id, day, state) DO UPDATE SET
                    pushes = d.pushes + excluded.pushes, targeted = d.targeted + excluded.targeted,
                    accepted = d.accepted + excluded.accepted, rejected = d.rejected + excluded.rejected,
                    expired = d.expired + excluded.expired, canceled = d.canceled + excluded.canceled,
                    tokens_invalidated = d.tokens_invalidated + excluded.tokens_invalidated,
                    rejected_by_reason = herald_add_counts(d.rejected_by_reason, excluded.rejected_by_reason),
                    skipped = d.skipped + excluded.skipped,
                    skipped_by_reason = herald_add_counts(d.skipped_by_reason, excluded.skipped_by_reason),
                    delivered_online = d.delivered_online + excluded.delivered_online,
                    received = d.received + excluded.received, opened = d.opened + excluded.opened
            ), gone AS (
                DELETE FROM pushes WHERE id IN (SELECT id FROM doomed) RETURNING 1
            )
            SELECT count(*) FROM gone
            """, logger: logger)
        var deleted = 0
        for try await count in rows.decode(Int64.self) { deleted = Int(count) }
        return deleted
    }
}
