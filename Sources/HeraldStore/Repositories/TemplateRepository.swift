import Foundation
import HeraldDomain
import Logging
import PostgresNIO

/// A stored notification template: a named notification (with placeholders and localized
/// variants) a push names by id instead of carrying one (migration 0018; docs/templates.md).
public struct TemplateRecord: Sendable, Equatable {
    public var id: UUID
    public var appID: UUID
    public var name: String
    public var description: String?
    /// The notification as the Open API took it (JSON text of its `Notification` object).
    public var notificationJSON: String
    public var createdAt: Date
    public var updatedAt: Date
}

/// Stored notification templates of each app.
public struct TemplateRepository: Sendable {
    let table: NamedDefinitions

    public init(client: PostgresClient, logger: Logger) {
        table = NamedDefinitions(client: client, logger: logger, table: "templates", column: "notification")
    }

    /// Templates an app may keep at most.
    public static let maximumPerApp = 1_000

    /// Saves a template, unless the app has ``maximumPerApp`` already.
    /// - Throws: ``NameTaken``, ``PerAppLimitReached``.
    public func create(
        id: UUID, appID: UUID, name: String, description: String?, notificationJSON: String,
        audit: AuditEntry? = nil
    ) async throws -> TemplateRecord {
        Self.template(
            try await table.create(
                id: id, appID: appID, name: name, description: description, definitionJSON: notificationJSON,
                limit: Self.maximumPerApp, audit: audit))
    }

    /// How many templates the app has.
    public func count(appID: UUID) async throws -> Int { try await table.count(appID: appID) }

    /// The app's templates by name.
    public func templates(appID: UUID) async throws -> [TemplateRecord] {
        try await table.list(appID: appID).map(Self.template)
    }

    /// The app's template `id`, if it has one.
    public func template(id: UUID, appID: UUID) async throws -> TemplateRecord? {
        try await table.get(id: id, appID: appID).map(Self.template)
    }

    /// Changes what is given (nil stays). Nil when the app has no such template. - Throws: ``NameTaken``.
    public func update(
        id: UUID, appID: UUID, name: String?, description: String?, notificationJSON: String?,
        audit: AuditEntry? = nil
    ) async throws -> TemplateRecord? {
        try await table.update(
            id: id, appID: appID, name: name, description: description, definitionJSON: notificationJSON,
            audit: audit
        ).map(Self.template)
    }

    /// Deletes the app's template `id`, with `audit` appended. Returns whether it existed.
    public func delete(id: UUID, appID: UUID, audit: AuditEntry? = nil) async throws -> Bool {
        try await table.delete(id: id, appID: appID, audit: audit)
    }

    static func template(_ row: NamedDefinitions.Row) -> TemplateRecord {
        TemplateRecord(
            id: row.id, appID: row.appID, name: row.name, description: row.description,
            notificationJSON: row.definitionJSON, createdAt: row.createdAt, updatedAt: row.updatedAt)
    }
}
