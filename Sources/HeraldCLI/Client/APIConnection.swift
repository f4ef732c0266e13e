import AsyncHTTPClient
import Foundation
import HTTPTypes
import HeraldAPIContract
import OpenAPIAsyncHTTPClient
import OpenAPIRuntime

/// The CLI's way to herald-api: the client generated from `Schemas/openapi.yaml`, so every
/// request and answer is typed by the contract, with the key presented as a bearer token and
/// every error answer turned into an ``APIFailure`` (one line that says what to fix).
struct APIConnection: Sendable {
    let client: Client
    let baseURL: String

    /// - Parameters:
    ///   - timeout: how long one request may take (an import is paced by its upload).
    ///   - httpClient: the HTTP client underneath. The shared one gives up on an answer after
    ///     90 s of silence whatever `timeout` says; a request that may be answered later brings
    ///     its own (``DevicesImportCommand``).
    init(baseURL: String, bearer: String, timeout: Duration = .seconds(60), httpClient: HTTPClient = .shared) throws {
        guard let url = URL(string: baseURL), url.scheme == "http" || url.scheme == "https" else {
            throw CLIError("HERALD_API_URL \(baseURL) is not an http(s) URL", status: .usage)
        }
        self.baseURL = baseURL
        let transport = AsyncHTTPClientTransport(
            configuration: .init(client: httpClient, timeout: .nanoseconds(timeout.components.seconds * 1_000_000_000)))
        client = Client(
            serverURL: url, configuration: .init(dateTranscoder: ISO8601Times()), transport: transport,
            middlewares: [Answers(baseURL: baseURL), Bearer(token: bearer)])
    }

    /// The connection for an app's own routes (a server key).
    static func app(
        _ configuration: ClientConfiguration, timeout: Duration = .seconds(60), httpClient: HTTPClient = .shared
    ) throws -> APIConnection {
        try APIConnection(
            baseURL: configuration.apiURL, bearer: try configuration.requireKey(), timeout: timeout,
            httpClient: httpClient)
    }

    /// The connection for the admin routes (apps, keys, credentials).
    static func admin(_ configuration: ClientConfiguration) throws -> APIConnection {
        try APIConnection(baseURL: configuration.apiURL, bearer: try configuration.requireAdminToken())
    }

    /// The connection for routes that need no key (health, readiness, metrics).
    static func anonymous(_ configuration: ClientConfiguration) throws -> APIConnection {
        try APIConnection(baseURL: configuration.apiURL, bearer: "")
    }

    /// Every item of a cursor-paged list: `page` fetches the page after a cursor and returns its
    /// items and the next cursor.
    static func everyItem<Item, Cursor>(_ page: (Cursor?) async throws -> ([Item], Cursor?)) async throws -> [Item] {
        var items: [Item] = []
        var cursor: Cursor?
        repeat {
            let (pageItems, next) = try await page(cursor)
            items += pageItems
            cursor = next
        } while cursor != nil
        return items
    }

    /// Presents the key.
    struct Bearer: ClientMiddleware {
        let token: String

        func intercept(
            _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
            next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
        ) async throws -> (HTTPResponse, HTTPBody?) {
            var request = request
            if !token.isEmpty { request.headerFields[.authorization] = "Bearer \(token)" }
            return try await next(request, body, baseURL)
        }
    }

    /// Turns an unreachable server into a line that says so, and an error answer into an
    /// ``APIFailure``, before the generated code sees either.
    struct Answers: ClientMiddleware {
        let baseURL: String

        func intercept(
            _ request: HTTPRequest, body: HTTPBody?, baseURL url: URL, operationID: String,
            next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
        ) async throws -> (HTTPResponse, HTTPBody?) {
            let response: HTTPResponse
            let responseBody: HTTPBody?
            do {
                (response, responseBody) = try await next(request, body, url)
            } catch {
                let cause = error.unwrappedFromClient
                if let timeout = cause as? HTTPClientError, timeout == .readTimeout || timeout == .deadlineExceeded {
                    // Reached, but no answer in time: the request may still be done (an import merged).
                    throw CLIError(
                        """
                        herald-api at \(baseURL) did not answer \(request.method) \(request.path ?? "") in the time this \
                        command waits (\(cause)): it may still complete the request; look (for an import, \
                        `herald devices list`) before sending it again
                        """, status: .unavailable)
                }
                throw CLIError(
                    """
                    cannot reach herald-api at \(baseURL) (\(cause)): is it running? `herald dev up` \
                    starts a local stack; otherwise set HERALD_API_URL
                    """, status: .unavailable)
            }
            guard response.status.kind == .successful else {
                var bytes: [UInt8] = []
                if let responseBody { bytes = try await [UInt8](collecting: responseBody, upTo: 1 << 20) }
                let operation = "\(request.method) \(request.path ?? "")"
                throw APIFailure(operation: operation, status: response.status.code, body: bytes)
            }
            return (response, responseBody)
        }
    }
}

/// Times as herald-api writes them (ISO 8601, whole seconds), read with or without fractions.
struct ISO8601Times: DateTranscoder {
    func encode(_ date: Date) throws -> String { date.formatted(.iso8601) }

    func decode(_ text: String) throws -> Date {
        guard let date = Output.date(text) else {
            throw CLIError("herald-api sent a time that is not ISO 8601: \(text)")
        }
        return date
    }
}

extension Error {
    /// The CLI's own error behind the generated client's wrapping (`ClientError`), if any.
    var unwrappedFromClient: any Error {
        if let error = self as? ClientError { return error.underlyingError.unwrappedFromClient }
        return self
    }
}
