import CLibPQ

#if canImport(Glibc)
import Glibc
#endif

/// One libpq connection that streams the rows of a query with
/// `COPY (query) TO STDOUT (FORMAT binary)` — PostgreSQL's fastest way out, which postgres-nio
/// does not offer.
///
/// Everything here blocks the calling thread (libpq's synchronous API): use it from a thread of
/// its own, never from Swift's cooperative pool. Only ``cancel()`` may be called from another
/// thread.
///
/// The password goes to libpq only; it is never part of an error or a log line.
public final class PostgresCopyConnection: @unchecked Sendable {
    /// Owned by this object from `PQconnectdbParams` until `PQfinish` in `deinit`.
    private let connection: OpaquePointer
    /// Made once after connecting; `PQcancel` on it is safe from any thread. Freed in `deinit`.
    private let canceller: OpaquePointer?

    /// Where and as whom to connect.
    public struct Settings: Sendable {
        public var host: String
        public var port: Int
        public var user: String
        public var password: String
        public var database: String
        public var applicationName: String
        /// More libpq connection parameters: the TLS ones (`sslmode`, `sslrootcert`, …).
        public var extraParameters: [(String, String)]

        public init(
            host: String, port: Int, user: String, password: String, database: String,
            applicationName: String = "herald", extraParameters: [(String, String)] = []
        ) {
            self.host = host
            self.port = port
            self.user = user
            self.password = password
            self.database = database
            self.applicationName = applicationName
            self.extraParameters = extraParameters
        }
    }

    /// Connects (blocking, at most 10 seconds).
    /// - Throws: ``PostgresCopyError`` with libpq's message when the server cannot be reached or
    ///   refuses the login.
    public init(_ settings: Settings) throws(PostgresCopyError) {
        let parameters: [(String, String)] =
            [
                ("host", settings.host), ("port", "\(settings.port)"), ("user", settings.user),
                ("password", settings.password), ("dbname", settings.database),
                ("application_name", settings.applicationName), ("connect_timeout", "10"),
            ] + settings.extraParameters
        // The C strings live until PQconnectdbParams returns; libpq copies what it keeps.
        let keys = parameters.map { strdup($0.0) }
        let values = parameters.map { strdup($0.1) }
        defer {
            for key in keys { free(key) }
            for value in values { free(value) }
        }
        var keyPointers = keys.map { UnsafePointer($0) } + [nil]
        var valuePointers = values.map { UnsafePointer($0) } + [nil]
        guard let connection = PQconnectdbParams(&keyPointers, &valuePointers, 0) else {
            throw PostgresCopyError("libpq could not allocate a connection")
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = Self.message(connection)
            PQfinish(connection)
            throw PostgresCopyError("cannot connect to PostgreSQL at \(settings.host):\(settings.port): \(message)")
        }
        self.connection = connection
        self.canceller = PQgetCancel(connection)
    }

    deinit {
        if let canceller { PQfreeCancel(canceller) }
        PQfinish(connection)
    }

    /// What the row handler wants next.
    public enum Next {
        case more
        /// Stop reading: the statement is canceled and what the server still sends is dropped.
        case stop
    }

    /// Runs `COPY (query) TO STDOUT (FORMAT binary)` and hands every row to `row`, in the
    /// query's order, until the rows end or `row` says `.stop`.
    ///
    /// - Parameters:
    ///   - query: a complete SELECT with its values written in (COPY takes no parameters): the
    ///     caller makes it safe.
    ///   - row: called on this thread for each row; the row's bytes are valid only during the call.
    /// - Throws: ``PostgresCopyError`` when the statement fails (its message is PostgreSQL's)
    ///   or the stream is not binary COPY; whatever `row` throws (after canceling the statement).
    public func copyOut(query: String, row: (BinaryCopyRow) throws -> Next) throws {
        guard let started = PQexec(connection, "COPY (\(query)) TO STDOUT (FORMAT binary)") else {
            throw PostgresCopyError("libpq could not send the COPY: \(Self.message(connection))")
        }
        let status = PQresultStatus(started)
        PQclear(started)
        guard status == PGRES_COPY_OUT else {
            // The statement failed; its error is on the connection.
            throw PostgresCopyError(Self.message(connection))
        }
        var parser = BinaryCopyParser()
        var stopped = false
        var handlerError: (any Error)?
        while true {
            var buffer: UnsafeMutablePointer<CChar>?
            let length = PQgetCopyData(connection, &buffer, 0)
            if length == -1 { break }  // the rows ended; the final result follows
            if length < 0 {
                throw PostgresCopyError("the COPY stream broke: \(Self.message(connection))")
            }
            // `buffer` is libpq's, ours until PQfreemem.
            defer { PQfreemem(buffer) }
            if stopped { continue }  // draining after a cancel
            let message = UnsafeRawBufferPointer(start: buffer, count: Int(length))
            do {
                try parser.rows(in: message) { parsed in
                    guard !stopped else { return }
                    if try row(parsed) == .stop { stopped = true }
                }
            } catch {
                handlerError = error
                stopped = true
            }
            if stopped { cancel() }
        }
        var failure: String?
        while let result = PQgetResult(connection) {
            if PQresultStatus(result) != PGRES_COMMAND_OK, failure == nil { failure = Self.message(connection) }
            PQclear(result)
        }
        if let handlerError { throw handlerError }
        if let failure, !stopped { throw PostgresCopyError(failure) }
    }

    /// Asks the server to cancel the running statement. Safe from any thread.
    public func cancel() {
        guard let canceller else { return }
        var errorBuffer = [CChar](repeating: 0, count: 256)
        _ = PQcancel(canceller, &errorBuffer, Int32(errorBuffer.count))
    }

    private static func message(_ connection: OpaquePointer) -> String {
        guard let text = PQerrorMessage(connection) else { return "unknown libpq error" }
        return String(cString: text).trimmingTrailingNewlines()
    }
}

/// A failed connection or COPY, with PostgreSQL's (or libpq's) own message.
public struct PostgresCopyError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

extension String {
    fileprivate func trimmingTrailingNewlines() -> String {
        var text = Substring(self)
        while text.last?.isNewline == true { text = text.dropLast() }
        return String(text)
    }
}
