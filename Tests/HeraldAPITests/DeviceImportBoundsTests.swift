import Foundation
import HeraldCore
import Testing

@testable import HeraldAPI

/// What an import costs herald-api at most: each byte scanned once, lines of bounded length, a
/// deadline and a minimum rate, one import per app and a few per process on connections of
/// their own.
@Suite("Device imports under hostile load")
struct DeviceImportBoundsTests {
    static func line(_ number: Int) -> String {
        let token = String(format: "%08x", number) + String(repeating: "ab", count: 28)
        return #"{"token":"\#(token)","environment":"production"}"#
    }

    @Test("a line longer than 64 KiB is rejected alone and skipped to its end, however the body is cut")
    func overlongLine() async {
        var parser = DeviceImportParser(format: .ndjson, appID: UUID(), bundleID: "com.example")
        let body = Array(
            (Self.line(1) + "\n" + String(repeating: "x", count: 200_000) + "\n" + Self.line(2) + "\n"
                + String(repeating: "y", count: 70_000)).utf8)
        var rows = 0
        var offset = 0
        while offset < body.count {
            let end = min(body.count, offset + 4093)
            rows += await parser.feed(body[offset..<end]).count
            offset = end
        }
        rows += parser.finish().count
        #expect(rows == 2)
        #expect(parser.lines == 4 && parser.rejected == 2)
        #expect(parser.errors.map(\.line) == [2, 4])
        #expect(parser.errors.allSatisfy { $0.message.contains("longer than 65536 bytes") })
    }

    @Test(
        "an upload that keeps herald-api waiting past the deadline, or arrives slower than the minimum rate over 30 s of waiting, is refused 408; time herald-api spends on its own work never counts"
    )
    func pace() throws {
        var pace = ImportPace(maximumBytes: 1 << 30, deadline: .seconds(120), minimumBytesPerSecond: 1000)
        try pace.received(20_000, waited: .seconds(10))
        try pace.received(20_000, waited: .seconds(21))  // 40,000 in 31 s of waiting: fast enough
        try pace.received(100, waited: .seconds(19))
        #expect {
            try pace.received(100, waited: .seconds(12))  // 200 bytes in 31 s
        } throws: { ($0 as? APIError)?.code == .importTooSlow && ($0 as? APIError)?.status == .requestTimeout }
        // A fast client behind a slow database: the chunks come at once whenever herald-api asks,
        // however long it spent copying the last ones (minutes, here) — never too slow.
        var busy = ImportPace(maximumBytes: 1 << 30, deadline: .seconds(60), minimumBytesPerSecond: 1000)
        for _ in 0..<2000 { try busy.received(100, waited: .milliseconds(20)) }
        var late = ImportPace(maximumBytes: 1 << 30, deadline: .seconds(60), minimumBytesPerSecond: 0)
        try late.received(1 << 20, waited: .seconds(59))
        #expect(throws: APIError.self) { try late.received(1 << 20, waited: .seconds(2)) }
        var large = ImportPace(maximumBytes: 1000, deadline: .seconds(60), minimumBytesPerSecond: 0)
        #expect { try large.received(1001, waited: .zero) } throws: { ($0 as? APIError)?.code == .importTooLarge }
        // A database that takes the rows ever slower: the whole upload stops at twice the deadline.
        var crawling = ImportPace(maximumBytes: 1 << 30, deadline: .seconds(60), minimumBytesPerSecond: 0)
        try crawling.received(100, waited: .milliseconds(1), elapsed: .seconds(120))
        #expect {
            try crawling.received(100, waited: .milliseconds(1), elapsed: .seconds(121))
        } throws: { ($0 as? APIError)?.code == .importTimedOut && ($0 as? APIError)?.status == .serviceUnavailable }
    }

    /// An import whose chunked body arrives as the test writes it, over a socket of its own.
    struct SlowImport {
        let connection: RawConnection

        init(port: Int, key: String) throws {
            connection = try RawConnection(port: port)
            try connection.send(
                "POST /v1/devices/import HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(key)\r\n"
                    + "Content-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n")
            try sendLine()
        }

        func sendLine() throws {
            let line = DeviceImportBoundsTests.line(Int.random(in: 0..<1 << 30)) + "\n"
            try connection.send(String(line.utf8.count, radix: 16) + "\r\n" + line + "\r\n")
        }

        /// Sends one more line and the end of the body; returns the answer's status line.
        func finish() async throws -> String {
            try sendLine()
            try connection.send("0\r\n\r\n")
            return try await connection.receiveStatusLine()
        }
    }

    @Test(
        "while an app's import is uploading, a second import of the app answers 409; past the process's import connections, another app's answers 429; other requests go on"
    )
    func concurrentImports() async throws {
        try await withAPI(configure: { $0.importConnections = 2 }) { api in
            let port = try #require(api.client.port)
            let first = try await api.createApp(name: "first")
            let second = try await api.createApp(name: "second")
            let third = try await api.createApp(name: "third")
            func importOne(_ key: String) async throws -> APITest.Answer {
                try await api.call(
                    .post, "/v1/devices/import", key: key, body: Self.line(Int.random(in: 0..<1 << 30)) + "\n",
                    contentType: "application/x-ndjson")
            }
            /// Waits until `count` imports hold their app's lock.
            func running(_ count: Int) async throws -> Bool {
                let deadline = ContinuousClock.now + .seconds(20)
                while ContinuousClock.now < deadline {
                    if try await AuthenticationHardeningTests.metric("herald_api_imports_running", api) == count {
                        return true
                    }
                    try await Task.sleep(for: .milliseconds(50))
                }
                return false
            }
            let slowFirst = try SlowImport(port: port, key: first.serverKey)
            #expect(try await running(1))
            let again = try await importOne(first.serverKey)
            #expect(again.status == .conflict && again.errorCode == "import_in_progress", "\(again.text)")
            let slowSecond = try SlowImport(port: port, key: second.serverKey)
            #expect(try await running(2))
            let busy = try await importOne(third.serverKey)
            #expect(busy.status == .tooManyRequests && busy.errorCode == "imports_busy", "\(busy.text)")
            // Ordinary requests go on meanwhile: imports hold connections of their own pool.
            #expect(try await api.call(.get, "/v1/devices?limit=1", key: third.serverKey).status == .ok)
            let firstStatus = try await slowFirst.finish()
            #expect(firstStatus.contains(" 200 "), "\(firstStatus)")
            let secondStatus = try await slowSecond.finish()
            #expect(secondStatus.contains(" 200 "), "\(secondStatus)")
            #expect(try await importOne(third.serverKey).status == .ok)
            #expect(try await running(0))
        }
    }

    @Test(
        "device limits hold on every path: registration and import alike; an import line that would break one is rejected alone"
    )
    func deviceLimitsOnEveryPath() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            // An alias with 100 devices: a registration that would make 101 is refused.
            for _ in 0..<100 { _ = try await api.register(app, alias: "crowd") }
            let refused = try await api.call(
                .post, "/v1/devices", key: app.serverKey,
                json: #"{"token":"\#(APITest.randomToken())","environment":"production","alias":"crowd"}"#)
            #expect(refused.status == .unprocessableContent && refused.errorField == "alias", "\(refused.text)")
            // A device with 99 tags.
            let tagged = APITest.randomToken()
            _ = try await api.register(app, token: tagged, tags: (0..<99).map { "t\($0)" })

            let fine = APITest.randomToken()
            let lines = [
                #"{"token":"\#(fine)","environment":"production","alias":"quiet"}"#,
                #"{"token":"\#(tagged)","environment":"production","tags":["new1","new2"]}"#,
                #"{"token":"\#(APITest.randomToken())","environment":"production","alias":"crowd"}"#,
                #"{"token":"\#(APITest.randomToken())","environment":"production","tags":["t1"]}"#,
            ]
            let answer = try await api.call(
                .post, "/v1/devices/import", key: app.serverKey, body: lines.joined(separator: "\n") + "\n",
                contentType: "application/x-ndjson")
            #expect(answer.status == .ok, "\(answer.text)")
            #expect(answer["accepted"] as? Int == 2 && answer["rejected"] as? Int == 2, "\(answer.text)")
            let errors = answer["errors"] as? [[String: Any]] ?? []
            #expect(errors.compactMap { $0["line"] as? Int } == [2, 3])
            #expect((errors.first?["message"] as? String)?.contains("more than 100 tags") == true)
            #expect((errors.last?["message"] as? String)?.contains(#"alias "crowd" would name more than 100"#) == true)
            let crowd = try await api.call(.get, "/v1/devices?alias=crowd&limit=1000", key: app.serverKey)
            #expect((crowd["devices"] as? [Any])?.count == 100)
        }
    }

    @Test(
        "a merge that outlasts HERALD_API_IMPORT_MERGE_TIMEOUT_MS is stopped by PostgreSQL: 503 import_timed_out, nothing imported, the next import goes through"
    )
    func mergePastItsTimeout() async throws {
        try await withAPI(configure: { $0.importMergeTimeout = .seconds(1) }) { api in
            let app = try await api.createApp()
            func lines() -> String {
                (0..<10).map { _ in #"{"token":"\#(APITest.randomToken())","environment":"production"}"# }
                    .joined(separator: "\n") + "\n"
            }
            // Another session holds this app's row: the merge's devices reference it (each new
            // row's foreign-key check takes KEY SHARE on it), so the merge waits past its
            // timeout, whatever the machine's speed. Only this app's row: the tests running
            // beside this one in the same database keep writing devices (a lock on the whole
            // devices table stalled them).
            let appID = try #require(UUID(uuidString: app.id))
            try await api.database.withTransaction(logger: api.logger) { connection in
                try await connection.query("SELECT 1 FROM apps WHERE id = \(appID) FOR UPDATE", logger: api.logger)
                let stopped = try await api.call(
                    .post, "/v1/devices/import", key: app.serverKey, body: lines(), contentType: "application/x-ndjson")
                #expect(
                    stopped.status == .serviceUnavailable && stopped.errorCode == "import_timed_out", "\(stopped.text)")
                #expect(stopped.headers[.retryAfter] != nil)
            }
            let devices = try await api.call(.get, "/v1/devices", key: app.serverKey)
            #expect((devices["devices"] as? [Any])?.isEmpty == true, "nothing of the stopped import was kept")
            let again = try await api.call(
                .post, "/v1/devices/import", key: app.serverKey, body: lines(), contentType: "application/x-ndjson")
            #expect(again["accepted"] as? Int == 10, "\(again.text)")
        }
    }
}
