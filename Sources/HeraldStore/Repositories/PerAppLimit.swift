import Foundation
import Logging
import PostgresNIO

/// The app has as many of something as it may have (segments, templates, schedules, webhook
/// endpoints, live keys): nothing was stored.
public struct PerAppLimitReached: Error, Sendable {
    /// How many the app may have.
    public let limit: Int
}

extension PostgresConnection {
    /// Runs `insert` (in the caller's transaction) unless the app has `limit` rows in `table`
    /// already. The app's row is locked first, so two inserts for one app take turns and cannot
    /// both take the last place; `NO KEY UPDATE` lets the app's devices and pushes (which take
    /// `KEY SHARE` on it) go on meanwhile. The lock, the count and the insert are one step
    /// (one transaction). A single `INSERT … SELECT … WHERE (SELECT count(*) …) < limit` would
    /// not be: under READ COMMITTED its count reads the snapshot taken before the statement
    /// waited, so two racing inserts could both see room for the last place.
    /// - Parameter table: a table with an `app_id` column; Herald's own name, never input.
    /// - Throws: ``PerAppLimitReached``.
    func insertWithinLimit(
        _ insert: PostgresQuery, appID: UUID, table: String, limit: Int, logger: Logger
    ) async throws -> ReadRows {
        try await run("SELECT 1 FROM apps WHERE id = \(appID) FOR NO KEY UPDATE", logger: logger)
        var count = PostgresQuery(unsafeSQL: "SELECT count(*) FROM \(table) WHERE app_id = $1")
        count.binds.append(appID)
        for try await rows in try await run(count, logger: logger).decode(Int64.self) where rows >= limit {
            throw PerAppLimitReached(limit: limit)
        }
        return try await run(insert, logger: logger)
    }
}
