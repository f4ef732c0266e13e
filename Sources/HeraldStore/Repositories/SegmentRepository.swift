import Foundation
import Logging
import PostgresNIO

/// A saved segment: a named filter over an app's devices (migration 0017; docs/segments.md).
public struct SegmentRecord: Sendable, Equatable {
    public var id: UUID
    public var appID: UUID
    public var name: String
    public var description: String?
    public var filter: AudienceFilter
    public var createdAt: Date
    public var updatedAt: Date
}

/// Saved segments of each app.
public struct SegmentRepository: Sendable {
    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Segments an app may keep at most.
    public static let maximumPerApp = 100

    /// A segment of this name exists already in the app.
    public struct NameTaken: Error {}

    static let columns = "id, app_id, name, description, filter::text, created_at, updated_at"

    /// Saves a segment. - Throws: ``NameTaken``.
    public func create(id: UUID, appID: UUID, name: String, description: String?, filter: AudienceFilter)
        async throws -> SegmentRecord
    {
        try await Self.naming {
            let rows = try await client.boundedQuery(
                """
                INSERT INTO segments (id, app_id, name, description, filter)
                VALUES (\(id), \(appID), \(name), \(description), \(filter.json.jsonText)::jsonb)
                RETURNING \(unescaped: Self.columns)
                """, logger: logger)
            guard let segment = try await Self.segments(from: rows).first else {
                throw StoreError(message: "saving a segment returned no row")
            }
            return segment
        }
    }

    /// How many segments the app has.
    public func count(appID: UUID) async throws -> Int {
        let rows = try await client.boundedQuery(
            "SELECT count(*) FROM segments WHERE app_id = \(appID)", logger: logger)
        for try await count in rows.decode(Int64.self) { return Int(count) }
        return 0
    }

    /// The app's segments by name.
    public func segments(appID: UUID) async throws -> [SegmentRecord] {
        let rows = try await client.boundedQuery(
            "SELECT \(unescaped: Self.columns) FROM segments WHERE app_id = \(appID) ORDER BY name, id", logger: logger)
        return try await Self.segments(from: rows)
    }

    /// The app's segment `id`, if it has one.
    public func segment(id: UUID, appID: UUID) async throws -> SegmentRecord? {
        let rows = try await client.boundedQuery(
            "SELECT \(unescaped: Self.columns) FROM segments WHERE id = \(id) AND app_id = \(appID)", logger: logger)
        return try await Self.segments(from: rows).first
    }

    /// Changes what is given (nil stays). Nil when the app has no such segment. - Throws: ``NameTaken``.
    public func update(id: UUID, appID: UUID, name: String?, description: String?, filter: AudienceFilter?)
        async throws -> SegmentRecord?
    {
        try await Self.naming {
            let rows = try await client.boundedQuery(
                """
                UPDATE segments SET name = COALESCE(\(name), name), description = COALESCE(\(description), description),
                    filter = COALESCE(\(filter?.json.jsonText)::jsonb, filter), updated_at = now()
                WHERE id = \(id) AND app_id = \(appID)
                RETURNING \(unescaped: Self.columns)
                """, logger: logger)
            return try await Self.segments(from: rows).first
        }
    }

    /// Deletes the app's segment `id`. Returns whether it existed.
    public func delete(id: UUID, appID: UUID) async throws -> Bool {
        let rows = try await client.boundedQuery(
            "DELETE FROM segments WHERE id = \(id) AND app_id = \(appID) RETURNING id", logger: logger)
        for try await _ in rows.decode(UUID.self) { return true }
        return false
    }

    static func naming<Result>(_ write: () async throws -> Result) async throws -> Result {
        do {
            return try await write()
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23505" {
            throw NameTaken()
        }
    }

    static func segments(from rows: PostgresRowSequence) async throws -> [SegmentRecord] {
        var segments: [SegmentRecord] = []
        for try await (id, app, name, description, filter, created, updated) in rows.decode(
            (UUID, UUID, String, String?, String, Date, Date).self)
        {
            segments.append(
                SegmentRecord(
                    id: id, appID: app, name: name, description: description,
                    filter: try AudienceFilter(json: JSONValue(jsonText: filter)), createdAt: created,
                    updatedAt: updated))
        }
        return segments
    }
}
