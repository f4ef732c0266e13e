import Foundation
import HTTPTypes
import HeraldAccess
import HeraldCore
import HeraldStore
import Logging
import NIOCore
import NIOHTTPTypes
import Testing

@testable import HeraldAPI

/// What an unauthenticated caller can make herald-api do: refusals before any body is read,
/// before any query for tokens that cannot be keys, throttled per source, and idle connections
/// closed. Over real HTTP on a free port.
@Suite("Open API: hostile callers before authentication")
struct AuthenticationHardeningTests {
    /// A counter of herald-api's /metrics.
    static func metric(_ name: String, _ api: APITest) async throws -> Int {
        let text = try await api.call(.get, "/metrics", key: nil).text
        let line = text.split(separator: "\n").first { $0.hasPrefix(name + " ") }
        return line.flatMap { Int($0.split(separator: " ").last ?? "") } ?? -1
    }

    static func madeUpKey() -> String {
        "hs_" + String((0..<43).map { _ in "abcdefghijklmnopqrstuvwxyz0123456789-_".randomElement()! })
    }

    @Test("a token not shaped like a key is refused without a look-up; a made-up key costs one look-up, then none")
    func tokenShapes() async throws {
        try await withAPI(configure: { $0.keyCacheTTL = .seconds(60) }) { api in
            let app = try await api.createApp()
            let before = try await Self.metric("herald_api_key_lookups_total", api)
            for token in [
                "x", String(repeating: "a", count: 46), "hs_" + String(repeating: "*", count: 43), "hs_short",
            ] {
                let answer = try await api.call(.get, "/v1/pushes", key: token)
                #expect(answer.status == .unauthorized && answer.errorCode == "unknown_key")
            }
            #expect(try await Self.metric("herald_api_key_lookups_total", api) == before)
            let madeUp = Self.madeUpKey()
            for _ in 0..<3 {
                #expect(try await api.call(.get, "/v1/pushes", key: madeUp).status == .unauthorized)
            }
            #expect(try await Self.metric("herald_api_key_lookups_total", api) == before + 1)
            #expect(try await api.call(.get, "/v1/pushes", key: app.serverKey).status == .ok)
            #expect(try await Self.metric("herald_api_authentication_failures_total", api) == 7)
        }
    }

    @Test("a flood of made-up keys never pushes a known key out of the cache")
    func floodKeepsKnownKeys() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            let counters = AccessCounters()
            let authenticator = KeyAuthenticator(
                keys: APIKeyRepository(client: api.database, logger: api.logger), cacheTTL: .seconds(60),
                counters: counters, knownKeys: 4, unknownTokens: 8)
            #expect(try await authenticator.authenticate(Substring(app.serverKey)) != nil)
            for _ in 0..<100 { #expect(try await authenticator.authenticate(Substring(Self.madeUpKey())) == nil) }
            let lookups = counters.keyLookups.load(ordering: .relaxed)
            #expect(lookups == 101)
            #expect(authenticator.isCachedKey(Substring(app.serverKey)))
            #expect(try await authenticator.authenticate(Substring(app.serverKey)) != nil)
            #expect(counters.keyLookups.load(ordering: .relaxed) == lookups, "served from the cache")
        }
    }

    @Test(
        "a source past the failure limit gets 429 for its further failures, but every valid key and the admin token it presents are served (no lock-out by guessing)"
    )
    func failedAuthenticationIsThrottled() async throws {
        try await withAPI(configure: { $0.authenticationFailuresPerMinute = 3 }) { api in
            for _ in 0..<2 {
                #expect(try await api.call(.get, "/v1/pushes", key: Self.madeUpKey()).status == .unauthorized)
            }
            // A wrong admin token counts too.
            #expect(try await api.call(.get, "/v1/apps", key: "not-the-admin-token").status == .unauthorized)
            let throttled = try await api.call(.get, "/v1/pushes", key: Self.madeUpKey())
            #expect(throttled.status == .tooManyRequests)
            #expect(throttled.errorCode == "too_many_failed_authentications")
            #expect(Int(throttled.headers[HTTPField.Name("Retry-After")!] ?? "") ?? 0 > 0)
            // The source is throttled; its valid credentials are not. The admin token, and a key
            // this process has never looked up (made after the throttle began; the test's key
            // cache is off, so every key below is a database look-up).
            #expect(try await api.call(.get, "/v1/apps", key: APITest.adminToken).status == .ok, "the admin token")
            let app = try await api.createApp()
            #expect(try await api.call(.get, "/v1/pushes", key: app.serverKey).status == .ok, "a new server key")
            let registration = try await api.call(
                .post, "/v1/devices", key: app.clientKey,
                json: #"{"token":"\#(APITest.randomToken())","environment":"production"}"#)
            #expect(registration.status.code < 300, "a client key: \(registration.text)")
            #expect(try await api.call(.get, "/v1/pushes", key: Self.madeUpKey()).status == .tooManyRequests)
            #expect(try await Self.metric("herald_api_authentication_throttled_total", api) == 2)
        }
    }

    /// Expects a request with a made-up key that claims `forwardedFor` in X-Forwarded-For to
    /// answer `status`.
    static func expectFailure(
        _ api: APITest, from forwardedFor: String, answers status: HTTPResponse.Status,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        var headers = HTTPFields()
        headers[HTTPField.Name("X-Forwarded-For")!] = forwardedFor
        let answer = try await api.call(.get, "/v1/pushes", key: madeUpKey(), headers: headers)
        #expect(answer.status == status, "from \(forwardedFor)", sourceLocation: sourceLocation)
    }

    @Test(
        "behind a trusted proxy each client named in X-Forwarded-For is throttled on its own; from an untrusted peer the header is ignored"
    )
    func trustedProxyNamesTheClient() async throws {
        try await withAPI(configure: {
            $0.authenticationFailuresPerMinute = 2
            $0.trustedProxies = "10.9.0.0/16, 127.0.0.1"
        }) { api in
            // The attacker's chain: a forged first hop, then what the proxy appended.
            for _ in 0..<2 {
                try await Self.expectFailure(api, from: "198.51.100.1, 203.0.113.7", answers: .unauthorized)
            }
            try await Self.expectFailure(api, from: "198.51.100.2, 203.0.113.7", answers: .tooManyRequests)
            // Another client behind the same proxy (and one more trusted hop) is not affected.
            try await Self.expectFailure(api, from: "203.0.113.8, 10.9.1.1", answers: .unauthorized)
        }
        try await withAPI(configure: { $0.authenticationFailuresPerMinute = 2 }) { api in
            // Nothing trusted: every request counts under the peer, 127.0.0.1, whatever it claims.
            try await Self.expectFailure(api, from: "203.0.113.1", answers: .unauthorized)
            try await Self.expectFailure(api, from: "203.0.113.2", answers: .unauthorized)
            try await Self.expectFailure(api, from: "203.0.113.3", answers: .tooManyRequests)
        }
    }

    @Test(
        "client keys: one source address gets its own slice of the app's client budget (429 past it), another source and the server keys go on"
    )
    func clientKeysAreLimitedPerSource() async throws {
        let time = StoppedClock()
        try await withAPI(
            configure: {
                $0.trustedProxies = "127.0.0.1"
                $0.clientSourceRateLimitPerSecond = 1
                $0.clientSourceRateLimitBurst = 3
            }, rateLimitClock: time.clock
        ) { api in
            let app = try await api.createApp()
            func lookUp(from source: String) async throws -> APITest.Answer {
                var headers = HTTPFields()
                headers[HTTPField.Name("X-Forwarded-For")!] = source
                return try await api.call(
                    .get, "/v1/devices/by-token/\(String(repeating: "ab", count: 32))", key: app.clientKey,
                    headers: headers)
            }
            for _ in 0..<3 { #expect(try await lookUp(from: "203.0.113.7").status == .notFound) }
            let refused = try await lookUp(from: "203.0.113.7")
            #expect(refused.status == .tooManyRequests)
            #expect(refused.errorCode == "rate_limited")
            #expect(
                (refused["error"] as? [String: Any])?["message"] as? String
                    == "This app's client keys may make 1 requests a second from one address (bursts of 3); retry after 1 s."
            )
            // Another address of the same /64 is the same subscriber; another /64 is not.
            #expect(try await lookUp(from: "2001:db8:1:2::1").status == .notFound)
            for _ in 0..<2 { _ = try await lookUp(from: "2001:db8:1:2::ffff") }
            #expect(try await lookUp(from: "2001:db8:1:2:abcd::9").status == .tooManyRequests)
            #expect(try await lookUp(from: "2001:db8:1:3::1").status == .notFound)
            #expect(try await lookUp(from: "198.51.100.4").status == .notFound)
            #expect(try await api.call(.get, "/v1/pushes", key: app.serverKey).status == .ok)
            // A second later by the limiter's clock, the source has one request again.
            time.advance(seconds: 1)
            #expect(try await lookUp(from: "203.0.113.7").status == .notFound)
        }
    }

    @Test(
        "a request with an unknown key is refused before its body is read (401, not 413) and its connection closed; without a key at most 4 KiB are read"
    )
    func bodyIsNotReadBeforeAuthentication() async throws {
        try await withAPI { api in
            let port = try #require(api.client.port)
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("herald-preauth-\(UUID())")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let large = folder.appendingPathComponent("large.json")
            // Over the 1 MiB body limit: read, it would answer 413.
            try Data(repeating: UInt8(ascii: " "), count: 3 << 20).write(to: large)
            let medium = folder.appendingPathComponent("medium.json")
            try Data(repeating: UInt8(ascii: " "), count: 10_000).write(to: medium)

            func post(_ file: URL, key: String?) throws -> (status: Int, headers: String) {
                let curl = Process()
                curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
                curl.arguments =
                    ["-s", "-D", "-", "-o", "/dev/null", "--max-time", "20", "-H", "Content-Type: application/json"]
                    + (key.map { ["-H", "Authorization: Bearer \($0)"] } ?? [])
                    + ["--data-binary", "@\(file.path)", "http://127.0.0.1:\(port)/v1/pushes"]
                let pipe = Pipe()
                curl.standardOutput = pipe
                curl.standardError = FileHandle.nullDevice
                try curl.run()
                let headers = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                curl.waitUntilExit()
                let status = headers.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
                return (status, headers.lowercased())
            }
            let unknown = try post(large, key: Self.madeUpKey())
            #expect(unknown.status == 401, "\(unknown.headers)")
            #expect(unknown.headers.contains("connection: close"))
            let keyless = try post(medium, key: nil)
            #expect(keyless.status == 401, "\(keyless.headers)")
            let app = try await api.createApp()
            #expect(try post(large, key: app.serverKey).status == 413, "a known key's body is read, up to the limit")
        }
    }

    @Test("a connection that sends nothing is closed after the idle timeout")
    func idleConnectionsAreClosed() async throws {
        try await withAPI(configure: { $0.idleTimeout = .milliseconds(500) }) { api in
            let connection = try RawConnection(port: try #require(api.client.port))
            // Half a request line, then silence; the server must hang up within 10 s.
            try connection.send("GET /healthz HT")
            let closed = await connection.waitForClose(within: 10)
            #expect(closed, "the server closed the connection")
        }
    }

    @Test("an upload that stops while the server waits for its body is closed after the idle timeout")
    func stalledUploadIsClosed() async throws {
        try await withAPI(configure: { $0.idleTimeout = .milliseconds(500) }) { api in
            let app = try await api.createApp()
            let connection = try RawConnection(port: try #require(api.client.port))
            try connection.send(
                "POST /v1/devices/import HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(app.serverKey)\r\n"
                    + "Content-Type: application/x-ndjson\r\nContent-Length: 100000\r\n\r\n{\"token\":")
            let closed = await connection.waitForClose(within: 10)
            #expect(closed, "the server closed the stalled upload")
        }
    }
}

/// When herald-api's connection clock runs: only while it waits on its client.
@Suite("Open API: the client-wait timeout")
struct ClientWaitTimeoutStateTests {
    typealias State = ClientWaitTimeoutHandler.State

    static let head = HTTPRequestPart.head(
        HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/v1/devices/import"))
    static let body = HTTPRequestPart.body(ByteBuffer(string: "{}\n"))

    @Test(
        "an idle connection waits on its client; the clock stops at a request's head and runs again after its response")
    func betweenRequests() {
        var state = State()
        #expect(state.connectionStarted() == .startClock)
        #expect(state.received(Self.head) == .stopClock)
        #expect(state.received(.end(nil)) == .none)
        #expect(!state.isWaitingOnClient, "the server works on a read request")
        #expect(state.responseEnded() == .startClock)
        #expect(state.isWaitingOnClient)
    }

    @Test(
        "a body runs the clock only while the server asked for more and none came; a server busy with what it has is never timed"
    )
    func body() {
        var state = State()
        _ = state.connectionStarted()
        _ = state.received(Self.head)
        #expect(!state.isWaitingOnClient, "the server has not asked for the body yet")
        #expect(state.serverAskedForMore() == .startClock)
        #expect(state.serverAskedForMore() == .none, "a second read while waiting changes nothing")
        #expect(state.received(Self.body) == .stopClock)
        // The import merges this batch for minutes: no read, no clock.
        #expect(!state.isWaitingOnClient)
        #expect(state.serverAskedForMore() == .startClock)
        #expect(state.received(.end(nil)) == .stopClock)
        // Reads after the end (the next request's head) do not count while this one is answered.
        #expect(state.serverAskedForMore() == .none && !state.isWaitingOnClient)
        #expect(state.responseEnded() == .startClock)
    }

    @Test("pipelined requests: the clock runs only once every response has ended")
    func pipelined() {
        var state = State()
        _ = state.connectionStarted()
        _ = state.received(Self.head)
        _ = state.received(.end(nil))
        _ = state.received(Self.head)
        _ = state.received(.end(nil))
        #expect(state.responseEnded() == .none && !state.isWaitingOnClient)
        #expect(state.responseEnded() == .startClock)

        // A request pipelined behind a live stream: its body is not timed while the stream runs.
        var streaming = State()
        _ = streaming.connectionStarted()
        _ = streaming.received(Self.head)
        _ = streaming.received(.end(nil))
        _ = streaming.received(Self.head)
        #expect(streaming.serverAskedForMore() == .none && !streaming.isWaitingOnClient)
        #expect(streaming.responseEnded() == .startClock, "the stream ended: the pipelined body is waited on")
    }
}
