import Foundation
import HeraldAPNsVocabulary
import HeraldDomain
import HeraldTiming
import Logging
import PostgresNIO

/// What the whole system looks like (pushes by state, the outbox's backlog, connections, expiring
/// certificates), read by the one center that holds the reporter lease.
public struct SystemGaugeRepository: Sendable {
    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
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
}
