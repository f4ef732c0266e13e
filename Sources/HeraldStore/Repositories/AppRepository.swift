import Foundation
import Logging
import PostgresNIO

/// Apps: create, read, rename, delete (which deletes their keys, credentials, devices and pushes).
public struct AppRepository: Sendable {
    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    public func create(name: String, bundleID: String, id: UUID = UUID()) async throws -> App {
        let rows = try await client.boundedQuery(
            """
            INSERT INTO apps (id, name, bundle_id) VALUES (\(id), \(name), \(bundleID))
            RETURNING id, name, bundle_id, created_at, updated_at
            """, logger: logger)
        return try await Self.first(rows)!
    }

    public func app(id: UUID) async throws -> App? {
        let rows = try await client.boundedQuery(
            "SELECT id, name, bundle_id, created_at, updated_at FROM apps WHERE id = \(id)", logger: logger)
        return try await Self.first(rows)
    }

    /// Apps in creation order, `limit` at a time after `cursor` (an app id).
    public func list(after cursor: UUID? = nil, limit: Int = 100) async throws -> [App] {
        let rows: PostgresRowSequence
        if let cursor {
            rows = try await client.boundedQuery(
                """
                SELECT id, name, bundle_id, created_at, updated_at FROM apps
                WHERE (created_at, id) > (SELECT created_at, id FROM apps WHERE id = \(cursor))
                ORDER BY created_at, id LIMIT \(limit)
                """, logger: logger)
        } else {
            rows = try await client.boundedQuery(
                "SELECT id, name, bundle_id, created_at, updated_at FROM apps ORDER BY created_at, id LIMIT \(limit)",
                logger: logger)
        }
        var apps: [App] = []
        for try await (id, name, bundleID, createdAt, updatedAt) in rows.decode((UUID, String, String, Date, Date).self)
        {
            apps.append(App(id: id, name: name, bundleID: bundleID, createdAt: createdAt, updatedAt: updatedAt))
        }
        return apps
    }

    /// Changes the name and/or bundle id. Returns `nil` for an unknown app.
    public func update(id: UUID, name: String?, bundleID: String?) async throws -> App? {
        let rows = try await client.boundedQuery(
            """
            UPDATE apps SET name = COALESCE(\(name), name), bundle_id = COALESCE(\(bundleID), bundle_id),
                            updated_at = now()
            WHERE id = \(id)
            RETURNING id, name, bundle_id, created_at, updated_at
            """, logger: logger)
        return try await Self.first(rows)
    }

    /// Deletes an app and everything that belongs to it. Returns whether it existed.
    @discardableResult
    public func delete(id: UUID) async throws -> Bool {
        let rows = try await client.boundedQuery("DELETE FROM apps WHERE id = \(id) RETURNING id", logger: logger)
        for try await _ in rows.decode(UUID.self) { return true }
        return false
    }

    private static func first(_ rows: PostgresRowSequence) async throws -> App? {
        for try await (id, name, bundleID, createdAt, updatedAt) in rows.decode((UUID, String, String, Date, Date).self)
        {
            return App(id: id, name: name, bundleID: bundleID, createdAt: createdAt, updatedAt: updatedAt)
        }
        return nil
    }
}
