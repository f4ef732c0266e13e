import HeraldCore
import Logging
import PostgresNIO

/// Herald's PostgreSQL connection pool.
public enum HeraldDatabase {
    /// A client for `settings`. It is a `Service`: run it (in a `ServiceGroup` or a task)
    /// before querying.
    public static func makeClient(settings: PostgresSettings, logger: Logger) -> PostgresClient {
        var configuration = PostgresClient.Configuration(
            host: settings.host,
            port: settings.port,
            username: settings.user,
            password: settings.password,
            database: settings.database,
            tls: .disable
        )
        configuration.options.maximumConnections = settings.maximumConnections
        configuration.options.minimumConnections = 0
        return PostgresClient(configuration: configuration, backgroundLogger: logger)
    }
}

extension HeraldDatabase {
    /// Runs `body` with a running client for `settings`, and stops the client afterwards.
    public static func withClient<Result: Sendable>(
        settings: PostgresSettings,
        logger: Logger,
        _ body: @Sendable (PostgresClient) async throws -> Result
    ) async throws -> Result {
        let client = makeClient(settings: settings, logger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            return try await body(client)
        }
    }
}

extension PostgresClient {
    /// Runs `body` in a transaction; if `body` throws, rolls back and rethrows *its* error (not
    /// postgres-nio's wrapper), so callers see what went wrong in their own terms.
    func transaction<Result: Sendable>(
        logger: Logger,
        _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        do {
            return try await withTransaction(logger: logger) { try await body($0) }
        } catch let error as PostgresTransactionError {
            if let bodyError = error.closureError { throw bodyError }
            throw error
        }
    }
}
