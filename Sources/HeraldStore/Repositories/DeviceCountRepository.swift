import Foundation
import Logging
import PostgresNIO

/// How many of an app's devices are in one environment and status, all of them or those with one
/// tag.
public struct DeviceGroupCounts: Sendable, Equatable {
    public var active: Int64 = 0
    public var invalid: Int64 = 0
    public var activeByEnvironment: [String: Int64] = [:]

    public init() {}

    mutating func add(environment: String, status: String, devices: Int64) {
        if status == "active" {
            active += devices
            activeByEnvironment[environment, default: 0] += devices
        } else {
            invalid += devices
        }
    }
}

/// One tag's devices.
public struct TagCounts: Sendable, Equatable {
    public var tag: String
    public var devices: DeviceGroupCounts
}

/// The device counts kept by migration 0014's triggers: `device_counts`, and the changes not
/// folded into it yet (`device_count_changes`). Reads add both, so they are exact at any time;
/// herald-center folds the changes (``fold(limit:)``) so that reads stay short.
public struct DeviceCountRepository: Sendable {
    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Every group's folded count and the changes not folded yet, as one relation; a filter on
    /// it reaches both tables' indexes (PostgreSQL pushes it into each side of the UNION ALL).
    static let kept = """
        (SELECT app_id, tag, environment, status, devices FROM device_counts
         UNION ALL
         SELECT app_id, tag, environment, status, devices FROM device_count_changes) kept
        """

    /// The app's devices by environment and status: all of them, or those carrying `tag`.
    public func devices(appID: UUID, carrying tag: String? = nil) async throws -> DeviceGroupCounts {
        // All devices are counted under the tag '' (a tag has at least one character).
        let rows = try await client.boundedQuery(
            """
            SELECT environment, status, sum(devices)::bigint FROM \(unescaped: Self.kept)
            WHERE app_id = \(appID) AND tag = \(tag ?? "")
            GROUP BY environment, status HAVING sum(devices) <> 0
            """, logger: logger)
        var counts = DeviceGroupCounts()
        for try await (environment, status, devices) in rows.decode((String, String, Int64).self) {
            counts.add(environment: environment, status: status, devices: devices)
        }
        return counts
    }

    /// The app's tags that have devices, in tag order, after `after`, starting with `prefix`, at
    /// most `limit` of them; `more` says whether a next page exists.
    public func tags(appID: UUID, prefix: String?, after: String?, limit: Int) async throws -> (
        tags: [TagCounts], more: Bool
    ) {
        // A tag has at most four groups (two environments, two statuses): (limit + 1) × 4 rows
        // hold the first `limit` tags whole and show whether one more exists. Tags compare
        // byte-wise (COLLATE "C"), whatever the database's collation, so the cursor is exact.
        let rows = try await client.boundedQuery(
            """
            SELECT tag, environment, status, sum(devices)::bigint FROM \(unescaped: Self.kept)
            WHERE app_id = \(appID) AND tag <> '' AND (\(after)::text IS NULL OR tag COLLATE "C" > \(after))
              AND (\(prefix)::text IS NULL OR starts_with(tag, \(prefix)))
            GROUP BY tag, environment, status HAVING sum(devices) <> 0
            ORDER BY tag COLLATE "C" LIMIT \((limit + 1) * 4)
            """, logger: logger)
        var tags: [TagCounts] = []
        for try await (tag, environment, status, devices) in rows.decode((String, String, String, Int64).self) {
            if tags.last?.tag != tag { tags.append(TagCounts(tag: tag, devices: DeviceGroupCounts())) }
            tags[tags.count - 1].devices.add(environment: environment, status: status, devices: devices)
        }
        let more = tags.count > limit
        return (Array(tags.prefix(limit)), more)
    }

    /// Moves up to `limit` changes into `device_counts`, oldest first; the changes of apps that
    /// are gone are dropped. Several centers may fold at once: each takes rows the others have
    /// not locked.
    /// - Returns: how many changes were folded.
    @discardableResult
    public func fold(limit: Int) async throws -> Int {
        let rows = try await client.boundedQuery(
            """
            WITH taken AS (
                SELECT id FROM device_count_changes ORDER BY id LIMIT \(limit) FOR UPDATE SKIP LOCKED
            ), moved AS (
                DELETE FROM device_count_changes c USING taken WHERE c.id = taken.id
                RETURNING c.app_id, c.tag, c.environment, c.status, c.devices
            ), summed AS (
                SELECT app_id, tag, environment, status, sum(devices)::bigint AS devices FROM moved
                WHERE EXISTS (SELECT 1 FROM apps a WHERE a.id = moved.app_id)
                GROUP BY app_id, tag, environment, status
            ), upserted AS (
                INSERT INTO device_counts AS counts (app_id, tag, environment, status, devices)
                SELECT app_id, tag, environment, status, devices FROM summed
                ORDER BY app_id, tag, environment, status  -- two folds lock shared rows in one order
                ON CONFLICT (app_id, tag, environment, status) DO UPDATE SET devices = counts.devices + EXCLUDED.devices
                RETURNING 1
            )
            SELECT (SELECT count(*) FROM moved), (SELECT count(*) FROM upserted)
            """, logger: logger)
        var folded = 0
        for try await (moved, _) in rows.decode((Int64, Int64).self) { folded = Int(moved) }
        if folded > 0 {
            // Tags no device carries any more: their rows would only be skipped by every read.
            _ = try await client.boundedQuery("DELETE FROM device_counts WHERE devices = 0", logger: logger)
        }
        return folded
    }
}
