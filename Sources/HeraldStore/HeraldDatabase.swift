import HeraldCore
import HeraldMetrics
import HeraldTiming
import Logging
import PostgresNIO

/// Herald's PostgreSQL connection pool.
public enum HeraldDatabase {
    /// A client for `settings`. It is a `Service`: run it (in a `ServiceGroup` or a task)
    /// before querying.
    /// - Throws: ``SettingError`` when a TLS file (`HERALD_POSTGRES_TLS_*`) is not PEM.
    public static func makeClient(settings: PostgresSettings, logger: Logger) throws(SettingError) -> PostgresClient {
        let tls: PostgresClient.Configuration.TLS = try tlsConfiguration(settings.tls).map { .require($0) } ?? .disable
        var configuration = PostgresClient.Configuration(
            host: settings.host,
            port: settings.port,
            username: settings.user,
            password: settings.password,
            database: settings.database,
            tls: tls
        )
        configuration.options.maximumConnections = settings.maximumConnections
        configuration.options.minimumConnections = 0
        configuration.options.additionalStartupParameters = [
            (
                "idle_in_transaction_session_timeout",
                String(max(0, settings.idleInTransactionTimeout.wholeMilliseconds))
            ),
            ("application_name", settings.applicationName),
        ]
        if settings.statementTimeout > .zero {
            configuration.options.additionalStartupParameters.append(
                ("statement_timeout", String(settings.statementTimeout.wholeMilliseconds)))
        }
        return PostgresClient(configuration: configuration, backgroundLogger: logger)
    }
}

extension HeraldDatabase {
    /// Runs `body` with a running client for `settings`, and stops the client afterwards.
    /// - Throws: ``DatabaseUnreachable`` at once when PostgreSQL cannot be reached or refuses the
    ///   login; what `body` throws.
    public static func withClient<Result: Sendable>(
        settings: PostgresSettings,
        logger: Logger,
        _ body: @Sendable (PostgresClient) async throws -> Result
    ) async throws -> Result {
        // Fail fast with the real reason: the pool retries a dead server for about a minute
        // before it gives up, and then only says that it did.
        if let error = await diagnose(settings: settings, logger: logger) { throw error }
        let client = try makeClient(settings: settings, logger: logger)
        do {
            return try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await client.run() }
                defer { group.cancelAll() }
                return try await body(client)
            }
        } catch {
            throw await explain(error, settings: settings, logger: logger)
        }
    }

    /// Turns postgres-nio's connection and login failures into an error that says where Herald
    /// tried to connect and what to do; other errors pass through.
    public static func explain(_ error: any Error, settings: PostgresSettings, logger: Logger) async -> any Error {
        if let reason = describeTLSFailure((error as? PSQLError)?.underlying ?? error, settings: settings) {
            return DatabaseUnreachable(settings: settings, reason: reason, isTLS: true)
        }
        if let error = error as? PSQLError {
            if error.code == .connectionError || error.code == .uncleanShutdown {
                let reason = error.underlying.map { "\($0)" } ?? "connection failed"
                return DatabaseUnreachable(settings: settings, reason: reason)
            }
            if error.code == .server, let sqlState = error.serverInfo?[.sqlState],
                sqlState.hasPrefix("28") || sqlState == "3D000"
            {
                // 28xxx: invalid authorization; 3D000: the database does not exist.
                return DatabaseUnreachable(settings: settings, reason: error.serverInfo?[.message] ?? "login refused")
            }
        }
        if String(describing: type(of: error)).contains("ConnectionPoolError") {
            // The pool reports only that it gave up; one direct attempt tells why.
            return await diagnose(settings: settings, logger: logger)
                ?? DatabaseUnreachable(settings: settings, reason: "no connection could be opened")
        }
        return error
    }

    /// Opens one connection outside the pool and explains how it fails (`nil` if it works).
    static func diagnose(settings: PostgresSettings, logger: Logger) async -> (any Error)? {
        do {
            let configuration = PostgresConnection.Configuration(
                host: settings.host, port: settings.port, username: settings.user, password: settings.password,
                database: settings.database, tls: try connectionTLS(settings.tls))
            let connection = try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger)
            try? await connection.close()
            return nil
        } catch {
            if error is SettingError { return error }
            if let reason = describeTLSFailure((error as? PSQLError)?.underlying ?? error, settings: settings) {
                return DatabaseUnreachable(settings: settings, reason: reason, isTLS: true)
            }
            if let psql = error as? PSQLError {
                if let message = psql.serverInfo?[.message] {
                    return DatabaseUnreachable(settings: settings, reason: message)
                }
                if let underlying = psql.underlying {
                    return DatabaseUnreachable(settings: settings, reason: "\(underlying)")
                }
            }
            return DatabaseUnreachable(settings: settings, reason: "\(error)")
        }
    }
}

extension HeraldDatabase {
    /// What went wrong with a database call, for a log line: postgres-nio's own description of
    /// its errors says only that it is generic (to keep statements and their values out of
    /// logs), which leaves an operator blind. This names the server's SQLSTATE and message, or
    /// the connection failure — never the statement, its values or the server's detail.
    public static func describe(_ error: any Error) -> String {
        if let error = error as? PostgresTransactionError {
            if let cause = error.beginError ?? error.closureError ?? error.commitError {
                return describe(cause)
            }
            return "transaction failed"
        }
        guard let error = error as? PSQLError else { return "\(error)" }
        if let info = error.serverInfo {
            return "PostgreSQL \(info[.sqlState] ?? "?"): \(info[.message] ?? "no message")"
        }
        if let underlying = error.underlying {
            return "PostgreSQL \(error.code): \(describe(underlying))"
        }
        return "PostgreSQL \(error.code)"
    }
}

/// PostgreSQL could not be reached or refused the login.
public struct DatabaseUnreachable: Error, CustomStringConvertible {
    public var settings: PostgresSettings
    public var reason: String
    /// The connection failed in its TLS handshake: the advice is about the TLS settings.
    public var isTLS: Bool

    public init(settings: PostgresSettings, reason: String, isTLS: Bool = false) {
        self.settings = settings
        self.reason = reason
        self.isTLS = isTLS
    }

    public var description: String {
        let advice =
            isTLS
            ? "Check HERALD_POSTGRES_TLS_MODE (\(settings.tls.mode.rawValue)), _TLS_CA_FILE and HERALD_POSTGRES_HOST"
            : """
            Start it (`make infra-up` runs the local one) or point HERALD_POSTGRES_HOST, _PORT, _USER, \
            _PASSWORD and _DATABASE at yours
            """
        return """
            cannot use PostgreSQL at \(settings.host):\(settings.port) (database \(settings.database), user \(settings.user)): \
            \(reason). \(advice) (docs/configuration.md).
            """
    }
}

extension HeraldDatabase {
    /// How long a statement or a transaction of Herald's may go without an answer before its
    /// caller gives up (and retries, or reports the error). postgres-nio 1.33.2 can leave a request
    /// made just as the server shuts down waiting for ever — the end-to-end database-outage test
    /// caught a center's counting and a fan-out each stuck that way — so no call waits unbounded.
    public static let answerWithin: Duration = .seconds(60)
}

extension PostgresClient {
    /// `query`'s rows, read whole (``PostgresConnection/run(_:logger:file:line:)``) on a
    /// connection of the pool, given up with ``DeadlineExceeded`` after `within` — the whole
    /// read, not only its start.
    @discardableResult
    func boundedQuery(
        _ query: PostgresQuery, logger: Logger, within: Duration = HeraldDatabase.answerWithin,
        file: String = #fileID, line: Int = #line
    ) async throws -> ReadRows {
        try await withDeadline(within) {
            try await self.withConnection { try await $0.run(query, logger: logger, file: file, line: line) }
        }
    }

    /// Runs `body` in a transaction; if `body` throws, rolls back and rethrows *its* error (not
    /// postgres-nio's wrapper), so callers see what went wrong in their own terms.
    /// - Parameter within: given up with ``DeadlineExceeded`` after this (PostgreSQL rolls back a
    ///   transaction whose connection goes away, or ends it after
    ///   `HERALD_POSTGRES_IDLE_IN_TRANSACTION_TIMEOUT_MS`); nil for a transaction paced by its
    ///   caller (a device import streaming an upload).
    func transaction<Result: Sendable>(
        logger: Logger,
        within: Duration? = HeraldDatabase.answerWithin,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        let run: @Sendable () async throws -> Result = {
            do {
                return try await self.withTransaction(logger: logger) { try await body($0) }
            } catch let error as PostgresTransactionError {
                if let bodyError = error.closureError { throw bodyError }
                throw error
            }
        }
        guard let within else { return try await run() }
        return try await withDeadline(within, run)
    }

    /// `withConnection`, given up with ``DeadlineExceeded`` after ``HeraldDatabase/answerWithin``.
    func boundedConnection<Result: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await withDeadline(HeraldDatabase.answerWithin) { try await self.withConnection { try await body($0) } }
    }
}

extension HeraldDatabase {
    /// `/readyz`: the pool gets a connection and PostgreSQL answers `SELECT 1`.
    public static func readinessCheck(_ client: PostgresClient, logger: Logger) -> HealthCheck {
        HealthCheck("postgres") {
            do {
                let rows = try await client.query("SELECT 1", logger: logger)
                for try await _ in rows.decode(Int32.self) {}
                return .pass("answers")
            } catch {
                return .fail(describe(error))
            }
        }
    }
}

extension PostgresConnection {
    /// Runs `query` and returns its rows, read to the end on the connection's event loop, each
    /// taken as it arrives.
    ///
    /// Every read of Herald's goes this way. postgres-nio 1.33.2's backpressured row stream
    /// (what `query(_:logger:)` returns) stops reading while rows handed over are unconsumed; if
    /// the server closes the connection just then (PostgreSQL shutting down), NIO still delivers
    /// what the socket holds and postgres-nio ends the process on a precondition
    /// (`RowStreamStateMachine.channelReadComplete`: "How can we receive a body part, after a
    /// channelReadComplete, but no read has been forwarded yet"). Rows taken as they arrive never
    /// leave that stream waiting, so the server's close is an error instead. The price is memory:
    /// the whole result is held, so every statement's result is bounded (a `LIMIT`, a page, a
    /// batch; docs/limits.md).
    @discardableResult
    func run(
        _ query: PostgresQuery, logger: Logger, file: String = #fileID, line: Int = #line
    ) async throws -> ReadRows {
        let gathered = GatheredRows()
        _ = try await self.query(query, logger: logger, file: file, line: line) { gathered.rows.append($0) }.get()
        return ReadRows(rows: gathered.rows)
    }
}

/// A statement's rows, read whole: an `AsyncSequence`, so a loop (and postgres-nio's `decode`)
/// reads them as it would the row stream.
struct ReadRows: AsyncSequence, Sendable {
    typealias Element = PostgresRow

    let rows: [PostgresRow]

    struct AsyncIterator: AsyncIteratorProtocol {
        var rows: IndexingIterator<[PostgresRow]>
        mutating func next() async throws -> PostgresRow? { rows.next() }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(rows: rows.makeIterator()) }
}

/// The rows ``PostgresConnection/run(_:logger:file:line:)`` gathers.
///
/// `@unchecked Sendable`: rows are appended only on the connection's event loop, one call at a
/// time, and read only after the query's future has completed, which orders every append
/// before the read.
private final class GatheredRows: @unchecked Sendable {
    var rows: [PostgresRow] = []
}
