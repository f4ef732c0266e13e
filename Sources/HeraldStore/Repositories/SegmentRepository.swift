import Foundation
import HeraldAPNsVocabulary
import HeraldDomain
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
    let table: NamedDefinitions

    public init(client: PostgresClient, logger: Logger) {
        table = NamedDefinitions(client: client, logger: logger, table: "segments", column: "filter")
    }

    /// Segments an app may keep at most.
    public static let maximumPerApp = 100

    /// Saves a segment, unless the app has ``maximumPerApp`` already.
    /// - Throws: ``NameTaken``, ``PerAppLimitReached``.
    public func create(
        id: UUID, appID: UUID, name: String, description: String?, filter: AudienceFilter,
        audit: AuditEntry? = nil
    ) async throws -> SegmentRecord {
        try Self.segment(
            try await table.create(
                id: id, appID: appID, name: name, description: description, definitionJSON: filter.json.jsonText,
                limit: Self.maximumPerApp, audit: audit))
    }

    /// How many segments the app has.
    public func count(appID: UUID) async throws -> Int { try await table.count(appID: appID) }

    /// The app's segments by name.
    public func segments(appID: UUID) async throws -> [SegmentRecord] {
        try await table.list(appID: appID).map(Self.segment)
    }

    /// The app's segment `id`, if it has one.
    public func segment(id: UUID, appID: UUID) async throws -> SegmentRecord? {
        try await table.get(id: id, appID: appID).map(Self.segment)
    }

    /// Changes what is given (nil stays). Nil when the app has no such segment. - Throws: ``NameTaken``.
    public func update(
        id: UUID, appID: UUID, name: String?, description: String?, filter: AudienceFilter?,
        audit: AuditEntry? = nil
    ) async throws -> SegmentRecord? {
        try await table.update(
            id: id, appID: appID, name: name, description: description, definitionJSON: filter?.json.jsonText,
            audit: audit
        ).map(Self.segment)
    }

    /// Deletes the app's segment `id`, with `audit` appended. Returns whether it existed.
    public func delete(id: UUID, appID: UUID, audit: AuditEntry? = nil) async throws -> Bool {
        try await table.delete(id: id, appID: appID, audit: audit)
    }

    static func segment(_ row: NamedDefinitions.Row) throws -> SegmentRecord {
        SegmentRecord(
            id: row.id, appID: row.appID, name: row.name, description: row.description,
            filter: try AudienceFilter(json: JSONValue(jsonText: row.definitionJSON)), createdAt: row.createdAt,
            updatedAt: row.updatedAt)
    }
}
