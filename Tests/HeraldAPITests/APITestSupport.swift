import AsyncHTTPClient
import Crypto
import Foundation
import HTTPTypes
import HeraldAccess
import HeraldCore
import HeraldStore
import Hummingbird
import HummingbirdTesting
import Logging
import PostgresNIO
import Synchronization
import Testing

@testable import HeraldAPI

/// A live herald-api (real HTTP on a free port) on the test PostgreSQL server, and helpers to
/// call it as an app back-end or the admin would.
struct APITest: Sendable {
    static let adminToken = "test-admin-token-\(UUID().uuidString)"

    let client: any TestClientProtocol
    let database: PostgresClient
    let logger: Logger
    let masterKey: String

    /// One answer: status, headers, and the body as text and (when it is an object) JSON.
    struct Answer: @unchecked Sendable {
        var status: HTTPResponse.Status
        var headers: HTTPFields
        var text: String
        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:] }
        var errorCode: String? { (json["error"] as? [String: Any])?["code"] as? String }
        var errorField: String? { (json["error"] as? [String: Any])?["field"] as? String }
        subscript(key: String) -> Any? { json[key] }
    }

    /// An app created through the API, with its two keys.
    struct CreatedApp: Sendable {
        var id: String
        var bundleID: String
        var serverKey: String
        var serverKeyID: String
        var clientKey: String
        /// The app's identity secret, shown once at creation (the key of alias signatures).
        var identitySecret: String
    }

    @discardableResult
    func call(
        _ method: HTTPRequest.Method, _ path: String, key: String?, json: String? = nil, body: String? = nil,
        contentType: String? = nil, headers extra: HTTPFields = [:]
    ) async throws -> Answer {
        var headers = extra
        if let key { headers[.authorization] = "Bearer \(key)" }
        var buffer: ByteBuffer?
        if let json {
            headers[.contentType] = "application/json"
            buffer = ByteBuffer(string: json)
        } else if let body {
            headers[.contentType] = contentType ?? "application/octet-stream"
            buffer = ByteBuffer(string: body)
        }
        let response = try await client.execute(uri: path, method: method, headers: headers, body: buffer)
        return Answer(status: response.status, headers: response.headers, text: String(buffer: response.body))
    }

    /// The client of ``callUnhurried(_:_:key:body:contentType:clientLogger:)``: five minutes for
    /// an answer. `HTTPClient.shared` gives up after 90 s without a byte (its read timeout), which a
    /// 100,000-line import outlasted while the whole suite ran on two cores: the client left, the
    /// test threw, and cancelling its server mid-COPY crashed the process in postgres-nio (CI's
    /// crash of 2026-11-30) or left it waiting. For the test process's life, never shut down.
    static let unhurriedClient = HTTPClient(
        eventLoopGroupProvider: .singleton,
        configuration: .init(timeout: .init(connect: .seconds(10), read: .minutes(5))))

    /// A request sent to the same live server with AsyncHTTPClient and five minutes: for one that
    /// may outlast the test client's fixed 20 s deadline (a 100,000-line import on a loaded
    /// machine), and for any sent after such a wait. The test client keeps one connection, which
    /// herald-api rightly closes once it has been idle for the idle timeout; AsyncHTTPClient
    /// opens a new one.
    /// `clientLogger` receives AsyncHTTPClient's own account of the request (its connection, its
    /// writes, its errors) at its level.
    func callUnhurried(
        _ method: HTTPRequest.Method, _ path: String, key: String, body: String? = nil, contentType: String? = nil,
        clientLogger: Logger? = nil
    ) async throws -> Answer {
        let response = try await openUnhurried(
            method, path, key: key, body: body, contentType: contentType, clientLogger: clientLogger)
        let text = String(buffer: try await response.body.collect(upTo: 16 << 20))
        var headers = HTTPFields()
        for header in response.headers {
            if let name = HTTPField.Name(header.name) { headers.append(HTTPField(name: name, value: header.value)) }
        }
        return Answer(status: HTTPResponse.Status(code: Int(response.status.code)), headers: headers, text: text)
    }

    /// An event stream's text, read as it arrives to its end; `afterFirstEvent` runs once the
    /// first whole event has come (to change what the stream shows next).
    static func readEvents(
        _ body: HTTPClientResponse.Body, afterFirstEvent: () async throws -> Void
    ) async throws -> String {
        var text = ""
        var first = true
        for try await part in body {
            text += String(buffer: part)
            if first, text.contains("data: "), text.hasSuffix("\n\n") {
                first = false
                try await afterFirstEvent()
            }
        }
        return text
    }

    /// The same request as ``callUnhurried(_:_:key:body:contentType:clientLogger:)``, answered as it streams in
    /// (an event stream read event by event).
    func openUnhurried(
        _ method: HTTPRequest.Method, _ path: String, key: String, body: String? = nil, contentType: String? = nil,
        clientLogger: Logger? = nil
    ) async throws -> HTTPClientResponse {
        guard let port = client.port else { throw HTTPClientError.invalidURL }
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        request.method = .init(rawValue: method.rawValue)
        request.headers.add(name: "Authorization", value: "Bearer \(key)")
        if let body {
            request.headers.add(name: "Content-Type", value: contentType ?? "application/octet-stream")
            request.body = .bytes(ByteBuffer(string: body))
        }
        return try await Self.unhurriedClient.execute(request, timeout: .minutes(5), logger: clientLogger)
    }

    func createApp(name: String = "test app") async throws -> CreatedApp {
        let bundleID = "com.herald.test.\(UUID().uuidString.prefix(8).lowercased())"
        let answer = try await call(
            .post, "/v1/apps", key: Self.adminToken, json: #"{"name":"\#(name)","bundle_id":"\#(bundleID)"}"#)
        #expect(answer.status == .created, "\(answer.text)")
        let app = answer["app"] as? [String: Any]
        let server = answer["server_key"] as? [String: Any]
        let client = answer["client_key"] as? [String: Any]
        return CreatedApp(
            id: app?["id"] as? String ?? "", bundleID: bundleID, serverKey: server?["key"] as? String ?? "",
            serverKeyID: server?["id"] as? String ?? "", clientKey: client?["key"] as? String ?? "",
            identitySecret: answer["identity_secret"] as? String ?? "")
    }

    /// Registers a device; returns its registration id.
    func register(
        _ app: CreatedApp, token: String = APITest.randomToken(), environment: String = "production",
        alias: String? = nil, tags: [String] = [], timeZone: String? = nil
    ) async throws -> Int64 {
        var fields = [#""token":"\#(token)""#, #""environment":"\#(environment)""#]
        if let alias { fields.append(#""alias":"\#(alias)""#) }
        if let timeZone { fields.append(#""time_zone":"\#(timeZone)""#) }
        if !tags.isEmpty { fields.append(#""tags":[\#(tags.map { "\"\($0)\"" }.joined(separator: ","))]"#) }
        let answer = try await call(
            .post, "/v1/devices", key: app.serverKey, json: "{\(fields.joined(separator: ","))}")
        #expect(answer.status == .created || answer.status == .ok, "\(answer.text)")
        return (answer["registration_id"] as? NSNumber)?.int64Value ?? -1
    }

    static func randomToken() -> String {
        (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }
}

/// Runs `body` against a live herald-api backed by the test database.
func withAPI(
    rateLimitPerSecond: Int = 100_000, burst: Int = 100_000,
    configure: @Sendable (inout APISettings) -> Void = { _ in }, logger: Logger = Logger(label: "test.api"),
    rateLimitClock: @escaping RateLimiter.Clock = RateLimiter.now,
    _ body: @Sendable (APITest) async throws -> Void
) async throws {
    let configuration = try await HeraldConfiguration.load()
    var settings = configuration.api
    settings.port = 0
    settings.rateLimitPerSecond = rateLimitPerSecond
    settings.rateLimitBurst = burst
    settings.keyCacheTTL = .zero
    // Every test's herald-api shares the test database; counted together they would divide
    // each other's rate limits. The sharing has tests of its own (APIReplicaRepositoryTests,
    // the scale-out test through a load balancer).
    settings.replicaHeartbeat = .zero
    // Counters are read through the API port here; tests of the operations port turn it on.
    settings.metricsPort = 0
    settings.metricsOnAPIPort = true
    configure(&settings)
    // herald-api's pool, as herald-api makes it (its statement timeout).
    let postgres = APIServer.poolSettings(configuration.postgres, api: settings)
    try await HeraldDatabase.withClient(settings: postgres, logger: logger) { [settings] database in
        try await MigrationRunner(client: database, logger: logger).migrate()
        var security = configuration.security
        security.adminToken = APITest.adminToken
        // The local cluster's key (scripts/with-infrastructure.sh): one key per database, as in
        // a deployment, so processes started against it pass their master-key check.
        let masterKey = try #require(
            ProcessInfo.processInfo.environment["HERALD_MASTER_KEY"], "run through scripts/with-infrastructure.sh")
        security.masterKey = masterKey
        let server = try APIServer(
            settings: settings, security: security, database: database, postgres: configuration.postgres,
            logger: logger,
            rateLimitClock: rateLimitClock)
        try await server.application.test(.live) { client in
            try await body(APITest(client: client, database: database, logger: logger, masterKey: masterKey))
        }
    }
}

/// A clock for herald-api's rate limiters that stands still until the test moves it: a test of
/// the limits then sees the same answers however slowly the machine serves its requests.
final class StoppedClock: Sendable {
    private let seconds = Mutex<Double>(1000)

    var clock: RateLimiter.Clock { { [self] in seconds.withLock { $0 } } }

    func advance(seconds step: Double) { seconds.withLock { $0 += step } }
}
