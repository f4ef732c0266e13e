import Foundation
import Logging
import PostgresNIO

#if canImport(FoundationEssentials)
import FoundationEssentials
#endif

/// One schema change, from a file `Schemas/postgres/NNNN_name.sql`.
public struct Migration: Sendable, Equatable {
    public var version: Int
    public var name: String
    public var sql: String

    /// The SQL cut into statements at top-level semicolons (quotes, `$$` bodies and comments
    /// are respected), because the extended query protocol runs one statement at a time.
    public var statements: [String] { SQLStatementSplitter.split(sql) }
}

/// Applies Herald's migrations, once each, in version order.
///
/// Services call ``migrate()`` at start and `herald migrate` calls it on demand. It holds a
/// PostgreSQL advisory lock while it works, so processes starting together apply each migration
/// once; each migration runs in its own transaction and is recorded in
/// `herald_schema_migrations`, so running it again on a migrated database changes nothing.
public struct MigrationRunner: Sendable {
    /// The advisory-lock key all Herald processes agree on ("HERALDMG").
    static let advisoryLockKey: Int64 = 0x4845_5241_4C44_4D47

    let client: PostgresClient
    let logger: Logger
    let migrations: [Migration]

    /// - Parameter migrations: the migrations to apply; those shipped with Herald by default.
    public init(client: PostgresClient, logger: Logger, migrations: [Migration]? = nil) throws {
        self.client = client
        self.logger = logger
        self.migrations = try migrations ?? MigrationRunner.bundledMigrations()
    }

    /// Applies the migrations not yet applied.
    /// - Returns: the versions applied by this call (empty when the database was up to date).
    @discardableResult
    public func migrate() async throws -> [Int] {
        try await client.withConnection { connection in
            // Waiting for another process's migrations, and a migration of a large table, take
            // as long as they take: a pool's statement_timeout (herald-api's) is lifted for this
            // connection, and put back (RESET: the value it started with) before it returns to
            // the pool.
            try await connection.run("SET statement_timeout = 0", logger: logger)
            do {
                try await connection.run("SELECT pg_advisory_lock(\(Self.advisoryLockKey))", logger: logger)
                do {
                    let applied = try await applyPending(on: connection)
                    try await connection.run("SELECT pg_advisory_unlock(\(Self.advisoryLockKey))", logger: logger)
                    try await connection.run("RESET statement_timeout", logger: logger)
                    return applied
                } catch {
                    _ = try? await connection.run("SELECT pg_advisory_unlock(\(Self.advisoryLockKey))", logger: logger)
                    throw error
                }
            } catch {
                _ = try? await connection.run("RESET statement_timeout", logger: logger)
                throw error
            }
        }
    }

    /// The versions recorded as applied.
    public func appliedVersions() async throws -> [Int] {
        try await client.withConnection { try await appliedVersions(on: $0) }
    }

    private func appliedVersions(on connection: PostgresConnection) async throws -> [Int] {
        // Looked for first: the runtime role (docs/security.md) may not create tables, and
        // PostgreSQL checks that privilege even for a table that exists.
        let table = try await connection.run(
            "SELECT to_regclass('herald_schema_migrations') IS NOT NULL", logger: logger)
        var exists = false
        for try await found in table.decode(Bool.self) { exists = found }
        if !exists {
            try await connection.run(
                """
                CREATE TABLE IF NOT EXISTS herald_schema_migrations (
                    version    integer PRIMARY KEY,
                    name       text NOT NULL,
                    applied_at timestamptz NOT NULL DEFAULT now()
                )
                """, logger: logger)
        }
        var versions: [Int] = []
        let rows = try await connection.run(
            "SELECT version FROM herald_schema_migrations ORDER BY version", logger: logger)
        for try await version in rows.decode(Int.self) {
            versions.append(version)
        }
        return versions
    }

    private func applyPending(on connection: PostgresConnection) async throws -> [Int] {
        let done = Set(try await appliedVersions(on: connection))
        var applied: [Int] = []
        for migration in migrations.sorted(by: { $0.version < $1.version }) where !done.contains(migration.version) {
            logger.info(
                "applying migration", metadata: ["version": "\(migration.version)", "name": "\(migration.name)"])
            try await connection.withTransaction(logger: logger) { transaction in
                for statement in migration.statements {
                    try await transaction.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await transaction.query(
                    "INSERT INTO herald_schema_migrations (version, name) VALUES (\(migration.version), \(migration.name))",
                    logger: logger
                )
            }
            applied.append(migration.version)
        }
        return applied
    }

    /// The migrations shipped with this build (`Schemas/postgres/*.sql`).
    public static func bundledMigrations() throws -> [Migration] {
        guard let directory = Bundle.module.url(forResource: "Migrations", withExtension: nil) else {
            throw MigrationError(message: "the migrations folder is missing from the HeraldStore resources bundle")
        }
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasSuffix(".sql") }
        return try files.map { file in
            let parts = file.dropLast(4).split(separator: "_", maxSplits: 1)
            guard parts.count == 2, let version = Int(parts[0]) else {
                throw MigrationError(message: "migration file \(file) is not named NNNN_name.sql")
            }
            let sql = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
            return Migration(version: version, name: String(parts[1]), sql: sql)
        }.sorted { $0.version < $1.version }
    }
}

/// A migration could not be loaded.
public struct MigrationError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

/// Cuts SQL text into statements at semicolons outside quotes, `$tag$` bodies and comments.
enum SQLStatementSplitter {
    static func split(_ sql: String) -> [String] {
        var statements: [String] = []
        var current: [Character] = []
        let characters = Array(sql)
        var index = 0
        var inSingleQuote = false
        var dollarTag: String?

        func flush() {
            let text = String(current).trimmingCharacters(in: .whitespacesAndNewlines)
            if !text.isEmpty { statements.append(text) }
            current.removeAll()
        }

        while index < characters.count {
            let character = characters[index]
            if let tag = dollarTag {
                current.append(character)
                if character == "$", String(characters[index..<min(characters.count, index + tag.count)]) == tag {
                    current.append(contentsOf: characters[(index + 1)..<(index + tag.count)])
                    index += tag.count
                    dollarTag = nil
                    continue
                }
                index += 1
                continue
            }
            if inSingleQuote {
                current.append(character)
                if character == "'" { inSingleQuote = false }
                index += 1
                continue
            }
            switch character {
            case "-" where index + 1 < characters.count && characters[index + 1] == "-":
                // A line comment: skip to the end of the line.
                while index < characters.count && characters[index] != "\n" { index += 1 }
                continue
            case "'":
                inSingleQuote = true
                current.append(character)
            case "$":
                var end = index + 1
                while end < characters.count,
                    characters[end].isLetter || characters[end].isNumber || characters[end] == "_"
                {
                    end += 1
                }
                if end < characters.count, characters[end] == "$" {
                    let tag = String(characters[index...end])
                    dollarTag = tag
                    current.append(contentsOf: characters[index...end])
                    index = end + 1
                    continue
                }
                current.append(character)
            case ";":
                flush()
            default:
                current.append(character)
            }
            index += 1
        }
        flush()
        return statements
    }
}
