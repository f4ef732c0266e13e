import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

/// A small client of herald-api's Open API for the CLI: JSON in, JSON out, and every error
/// turned into one line that says what to fix.
struct APIClient: Sendable {
    let baseURL: String
    let bearer: String

    /// A JSON answer: the status, the decoded body and the headers.
    struct Answer: @unchecked Sendable {
        var status: Int
        var body: [String: Any]
        var headers: HTTPHeaders
    }

    func get(_ path: String) async throws -> Answer {
        try await send(.GET, path)
    }

    func post(_ path: String, json: [String: Any]? = nil, headers: [(String, String)] = []) async throws -> Answer {
        try await send(
            .POST, path, body: json.map { try Self.encode($0) }, contentType: "application/json", headers: headers)
    }

    func put(_ path: String, json: [String: Any]) async throws -> Answer {
        try await send(.PUT, path, body: try Self.encode(json), contentType: "application/json")
    }

    func delete(_ path: String) async throws -> Answer {
        try await send(.DELETE, path)
    }

    /// Every item of a cursor-paged list (`items` under `key`, then `next_cursor`), `limit` a page.
    func everyItem(_ path: String, key: String, limit: Int) async throws -> [[String: Any]] {
        var items: [[String: Any]] = []
        var cursor: String?
        repeat {
            let query = "\(path.contains("?") ? "&" : "?")limit=\(limit)" + (cursor.map { "&cursor=\($0)" } ?? "")
            let page = try await get(path + query).body
            items += page[key] as? [[String: Any]] ?? []
            cursor = page["next_cursor"].map { "\($0)" }
        } while cursor != nil
        return items
    }

    /// Streams a file as the request body (never read into memory whole).
    func upload(_ path: String, file: String, contentType: String) async throws -> Answer {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: file),
            let size = attributes[.size] as? Int
        else {
            throw CLIError("cannot read \(file): no such file")
        }
        guard let handle = FileHandle(forReadingAtPath: file) else { throw CLIError("cannot open \(file)") }
        defer { try? handle.close() }
        return try await send(
            .POST, path, stream: .stream(FileChunks(handle: handle), length: .known(Int64(size))),
            contentType: contentType, timeout: .hours(1))
    }

    /// A file read a megabyte at a time, as the request body asks for more.
    struct FileChunks: AsyncSequence, @unchecked Sendable {
        typealias Element = ByteBuffer
        let handle: FileHandle

        struct AsyncIterator: AsyncIteratorProtocol {
            let handle: FileHandle
            mutating func next() async throws -> ByteBuffer? {
                let data = handle.readData(ofLength: 1 << 20)
                return data.isEmpty ? nil : ByteBuffer(data: data)
            }
        }

        func makeAsyncIterator() -> AsyncIterator { AsyncIterator(handle: handle) }
    }

    private static func encode(_ json: [String: Any]) throws -> ByteBuffer {
        ByteBuffer(data: try JSONSerialization.data(withJSONObject: json, options: [.sortedKeys]))
    }

    private func send(
        _ method: HTTPMethod, _ path: String, body: ByteBuffer? = nil, stream: HTTPClientRequest.Body? = nil,
        contentType: String? = nil, headers extra: [(String, String)] = [],
        timeout: TimeAmount = .seconds(60)
    ) async throws -> Answer {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(bearer)")
        request.headers.add(name: "Accept", value: "application/json")
        if let contentType, body != nil || stream != nil {
            request.headers.add(name: "Content-Type", value: contentType)
        }
        for (name, value) in extra { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(body) } else if let stream { request.body = stream }

        let response: HTTPClientResponse
        let bytes: ByteBuffer
        do {
            response = try await HTTPClient.shared.execute(request, timeout: timeout)
            bytes = try await response.body.collect(upTo: 64 << 20)
        } catch {
            throw CLIError(
                """
                cannot reach herald-api at \(baseURL) (\(error)): is it running? `herald dev up` starts a local \
                stack; otherwise set HERALD_API_URL
                """)
        }
        var decoded: [String: Any] = [:]
        if bytes.readableBytes > 0,
            let object = try? JSONSerialization.jsonObject(with: Data(buffer: bytes)) as? [String: Any]
        {
            decoded = object
        }
        let status = Int(response.status.code)
        guard (200..<300).contains(status) else {
            throw Self.failure(status: status, body: decoded, method: method, path: path)
        }
        return Answer(status: status, body: decoded, headers: response.headers)
    }

    /// herald-api's `{"error":{code,message,field}}` as one line, with a hint where one helps.
    static func failure(status: Int, body: [String: Any], method: HTTPMethod, path: String) -> CLIError {
        let error = body["error"] as? [String: Any]
        let code = error?["code"] as? String ?? "http_\(status)"
        var message = error?["message"] as? String ?? "no error body"
        if let field = error?["field"] as? String { message += " (field \(field))" }
        var hint = ""
        switch status {
        case 401: hint = " — check HERALD_API_KEY / HERALD_ADMIN_TOKEN (or the config file in HERALD_CLI_CONFIG)"
        case 403: hint = " — this key may not do that (client keys only register devices; apps need the admin token)"
        case 429: hint = " — rate limited; retry after the time in Retry-After"
        case 503: hint = " — herald-api cannot reach its database; it recovers by itself when the database is back"
        default: break
        }
        return CLIError("\(method) \(path): \(status) \(code): \(message)\(hint)")
    }
}

extension APIClient {
    /// The client for an app's own routes (a server key).
    static func app(_ configuration: ClientConfiguration) throws -> APIClient {
        APIClient(baseURL: configuration.apiURL.trimmingSuffix("/"), bearer: try configuration.requireKey())
    }

    /// The client for the admin routes (apps, keys, credentials).
    static func admin(_ configuration: ClientConfiguration) throws -> APIClient {
        APIClient(baseURL: configuration.apiURL.trimmingSuffix("/"), bearer: try configuration.requireAdminToken())
    }
}

extension String {
    func trimmingSuffix(_ suffix: String) -> String {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) : self
    }
}
