import Foundation
import HeraldTiming
import Logging
import PostgresNIO

/// The herald-api processes alive now (`api_replicas`): each renews its row and counts the
/// others, to share the apps' rate limits.
public struct APIReplicaRepository: Sendable {
    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Renews this process's row, forgets rows not renewed for a minute, and counts the processes
    /// seen within `aliveWithin`, this one included.
    public func heartbeat(id: UUID, name: String, aliveWithin: Duration) async throws -> Int {
        let rows = try await client.boundedQuery(
            """
            WITH beat AS (
                INSERT INTO api_replicas (id, name, seen_at) VALUES (\(id), \(name), now())
                ON CONFLICT (id) DO UPDATE SET seen_at = now(), name = excluded.name
            ), forgotten AS (
                DELETE FROM api_replicas WHERE seen_at < now() - interval '60 seconds' AND id <> \(id)
            )
            SELECT count(*) + 1 FROM api_replicas
            WHERE id <> \(id) AND seen_at >= now() - \(aliveWithin.wholeMilliseconds) * interval '1 millisecond'
            """, logger: logger, within: aliveWithin)
        var count = 1
        for try await value in rows.decode(Int64.self) { count = Int(value) }
        return count
    }

    /// Removes this process's row (at shutdown), so the others take its share at once.
    public func leave(id: UUID) async throws {
        _ = try await client.boundedQuery(
            "DELETE FROM api_replicas WHERE id = \(id)", logger: logger, within: .seconds(5))
    }
}
