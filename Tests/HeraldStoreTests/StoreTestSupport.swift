import Foundation
import HeraldCore
import HeraldStore
import Logging
import PostgresNIO

/// Runs `body` with a client for the test database (`make test` starts it), migrated.
func withMigratedStore<Result: Sendable>(_ body: @Sendable (PostgresClient, Logger) async throws -> Result) async throws
    -> Result
{
    let configuration = try await HeraldConfiguration.load()
    let logger = Logger(label: "test.store")
    return try await HeraldDatabase.withClient(settings: configuration.postgres, logger: logger) { client in
        try await MigrationRunner(client: client, logger: logger).migrate()
        return try await body(client, logger)
    }
}

/// A fresh, empty database for one test, dropped afterwards.
func withEmptyDatabase<Result: Sendable>(_ body: @Sendable (PostgresClient, Logger) async throws -> Result) async throws
    -> Result
{
    try await withEmptyDatabaseNamed { client, logger, _ in try await body(client, logger) }
}

/// ``withEmptyDatabase(_:)``, with the database's name (for processes the test starts against it).
func withEmptyDatabaseNamed<Result: Sendable>(
    _ body: @Sendable (PostgresClient, Logger, String) async throws -> Result
) async throws -> Result {
    let configuration = try await HeraldConfiguration.load()
    let logger = Logger(label: "test.store.empty")
    let name = "herald_test_\(UUID().uuidString.prefix(8).lowercased())"
    try await HeraldDatabase.withClient(settings: configuration.postgres, logger: logger) { admin in
        try await admin.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"), logger: logger)
    }
    var settings = configuration.postgres
    settings.database = name
    do {
        let result = try await HeraldDatabase.withClient(settings: settings, logger: logger) {
            try await body($0, logger, name)
        }
        try await dropDatabase(name, configuration: configuration, logger: logger)
        return result
    } catch {
        try? await dropDatabase(name, configuration: configuration, logger: logger)
        throw error
    }
}

private func dropDatabase(_ name: String, configuration: HeraldConfiguration, logger: Logger) async throws {
    try await HeraldDatabase.withClient(settings: configuration.postgres, logger: logger) { admin in
        try await admin.query(PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(name) WITH (FORCE)"), logger: logger)
    }
}

/// A random device token of `length` bytes.
func randomToken(length: Int = 32) -> [UInt8] {
    (0..<length).map { _ in UInt8.random(in: 0...255) }
}
