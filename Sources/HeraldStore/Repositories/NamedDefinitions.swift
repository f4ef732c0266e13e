import Foundation
import HeraldDomain
import Logging
import PostgresNIO

/// A table of named JSON definitions per app — saved segments (a filter) and notification
/// templates — with the same shape: id, app, unique name, optional description, the definition as
/// jsonb, and when it was created and last changed. ``SegmentRepository`` and
/// ``TemplateRepository`` read their definitions through it.
struct NamedDefinitions: Sendable {
    let client: PostgresClient
    let logger: Logger
    /// `segments` or `templates` (never caller input).
    let table: String
    /// The jsonb column holding the definition.
    let column: String

    struct Row: Sendable {
        var id: UUID
        var appID: UUID
        var name: String
        var description: String?
        var definitionJSON: String
        var createdAt: Date
        var updatedAt: Date
    }

    private var columns: String { "id, app_id, name, description, \(column)::text, created_at, updated_at" }

    /// A new row, with `audit` appended, unless the app has `limit` rows already.
    /// - Throws: ``PerAppLimitReached``, ``NameTaken``.
    func create(
        id: UUID, appID: UUID, name: String, description: String?, definitionJSON: String, limit: Int,
        audit: AuditEntry?
    ) async throws -> Row {
        var query = PostgresQuery(
            unsafeSQL: """
                INSERT INTO \(table) (id, app_id, name, description, \(column)) VALUES ($1, $2, $3, $4, $5::jsonb)
                RETURNING \(columns)
                """)
        query.binds.append(id)
        query.binds.append(appID)
        query.binds.append(name)
        query.binds.append(description)
        query.binds.append(definitionJSON)
        let (table, insert) = (self.table, query)
        let row = try await NameTaken.translating {
            try await client.transaction(logger: logger) { connection in
                let inserted = try await connection.insertWithinLimit(
                    insert, appID: appID, table: table, limit: limit, logger: logger)
                if let audit { try await connection.append(audit, logger: logger) }
                return try await Self.rows(inserted).first
            }
        }
        guard let row else { throw StoreError(message: "saving into \(table) returned no row") }
        return row
    }

    func count(appID: UUID) async throws -> Int {
        var query = PostgresQuery(unsafeSQL: "SELECT count(*) FROM \(table) WHERE app_id = $1")
        query.binds.append(appID)
        for try await count in try await client.boundedQuery(query, logger: logger).decode(Int64.self) {
            return Int(count)
        }
        return 0
    }

    func list(appID: UUID) async throws -> [Row] {
        var query = PostgresQuery(unsafeSQL: "SELECT \(columns) FROM \(table) WHERE app_id = $1 ORDER BY name, id")
        query.binds.append(appID)
        return try await rows(query)
    }

    func get(id: UUID, appID: UUID) async throws -> Row? {
        var query = PostgresQuery(unsafeSQL: "SELECT \(columns) FROM \(table) WHERE id = $1 AND app_id = $2")
        query.binds.append(id)
        query.binds.append(appID)
        return try await rows(query).first
    }

    /// Changes what is given (nil stays), with `audit` appended. Nil when the app has no such row.
    func update(
        id: UUID, appID: UUID, name: String?, description: String?, definitionJSON: String?, audit: AuditEntry?
    ) async throws -> Row? {
        var query = PostgresQuery(
            unsafeSQL: """
                UPDATE \(table) SET name = COALESCE($3, name), description = COALESCE($4, description),
                    \(column) = COALESCE($5::jsonb, \(column)), updated_at = now()
                WHERE id = $1 AND app_id = $2
                RETURNING \(columns)
                """)
        query.binds.append(id)
        query.binds.append(appID)
        query.binds.append(name)
        query.binds.append(description)
        query.binds.append(definitionJSON)
        return try await NameTaken.translating { try await rows(query, audit: audit).first }
    }

    /// Returns whether the row existed; `audit` is appended when it did.
    func delete(id: UUID, appID: UUID, audit: AuditEntry?) async throws -> Bool {
        var query = PostgresQuery(unsafeSQL: "DELETE FROM \(table) WHERE id = $1 AND app_id = $2 RETURNING id")
        query.binds.append(id)
        query.binds.append(appID)
        for try await _ in try await client.audited(query, audit, logger: logger).decode(UUID.self) { return true }
        return false
    }

    private func rows(_ query: PostgresQuery, audit: AuditEntry? = nil) async throws -> [Row] {
        try await Self.rows(client.audited(query, audit, logger: logger))
    }

    private static func rows(_ read: ReadRows) async throws -> [Row] {
        var rows: [Row] = []
        for try await (id, app, name, description, definition, created, updated) in read.decode(
            (UUID, UUID, String, String?, String, Date, Date).self)
        {
            rows.append(
                Row(
                    id: id, appID: app, name: name, description: description, definitionJSON: definition,
                    createdAt: created, updatedAt: updated))
        }
        return rows
    }
}

/// A segment or template of this name exists already in the app.
public struct NameTaken: Error {
    /// Runs `write`, turning a unique violation (the app has the name already) into ``NameTaken``.
    static func translating<Result>(_ write: () async throws -> Result) async throws -> Result {
        do {
            return try await write()
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23505" {
            throw NameTaken()
        }
    }
}
