import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
import Logging
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
            let metrics = APIMetrics()
            let authenticator = KeyAuthenticator(
                keys: APIKeyRepository(client: api.database, logger: api.logger), cacheTTL: .seconds(60),
                metrics: metrics, knownKeys: 4, unknownTokens: 8)
            #expect(try await authenticator.authenticate(Substring(app.serverKey)) != nil)
            for _ in 0..<100 { #expect(try await authenticator.authenticate(Substring(Self.madeUpKey())) == nil) }
            let lookups = metrics.keyLookups.load(ordering: .relaxed)
            #expect(lookups == 101)
            #expect(authenticator.isCachedKey(Substring(app.serverKey)))
            #expect(try await authenticator.authenticate(Substring(app.serverKey)) != nil)
            #expect(metrics.keyLookups.load(ordering: .relaxed) == lookups, "served from the cache")
        }
    }

    @Test(
        "a source that presented unknown keys past the limit gets 429 for the rest of the minute, admin token included; a key already known still works"
    )
    func failedAuthenticationIsThrottled() async throws {
        try await withAPI(configure: {
            $0.authenticationFailuresPerMinute = 3
            $0.keyCacheTTL = .seconds(60)
        }) { api in
            let app = try await api.createApp()
            #expect(try await api.call(.get, "/v1/pushes", key: app.serverKey).status == .ok)
            for _ in 0..<2 {
                #expect(try await api.call(.get, "/v1/pushes", key: Self.madeUpKey()).status == .unauthorized)
            }
            // A wrong admin token counts too.
            #expect(try await api.call(.get, "/v1/apps", key: "not-the-admin-token").status == .unauthorized)
            let throttled = try await api.call(.get, "/v1/pushes", key: Self.madeUpKey())
            #expect(throttled.status == .tooManyRequests)
            #expect(throttled.errorCode == "too_many_failed_authentications")
            #expect(Int(throttled.headers[HTTPField.Name("Retry-After")!] ?? "") ?? 0 > 0)
            #expect(try await api.call(.get, "/v1/apps", key: APITest.adminToken).status == .tooManyRequests)
            #expect(try await api.call(.get, "/v1/pushes", key: app.serverKey).status == .ok, "a known key")
            #expect(try await Self.metric("herald_api_authentication_throttled_total", api) == 2)
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
}
