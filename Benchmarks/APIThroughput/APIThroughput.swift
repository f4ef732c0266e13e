// api-throughput: single-device pushes posted to a herald-api process at full speed by wrk for
// a while; prints accepted pushes/s and p50/p99 latency, and in the same run /healthz under the
// same load as the reference for the server's bare cost.
//
// With --events, engagement events instead (docs/engagement.md): batches of --batch `opened`
// events, each about a different device, posted to POST /v1/events with a server key, about pushes
// whose batches (written as herald-center writes them, 500 devices each, APNs having accepted
// every device) cover --devices devices; prints events stored per second against /healthz.
//
// Run it with `make bench-api` or `make bench-events` (release build, PostgreSQL up).
import ArgumentParser
import BenchmarkSupport
import Foundation
import HeraldCore
import HeraldStore
import Logging
import PostgresNIO

@main
struct APIThroughput: AsyncParsableCommand {
    @Option(help: "Folder with herald-api (release build).") var binaries = ".build/release"
    @Option(help: "Seconds of load per run.") var duration = 30
    @Option(help: "Open connections.") var connections = 64
    @Option(help: "wrk threads.") var threads = 2
    @Option(help: "herald-api's port.") var port = 18_080
    @Flag(help: "Engagement events (POST /v1/events) instead of pushes.") var events = false
    @Option(help: "With --events: devices the pushes were sent to.") var devices = 100_000
    @Option(help: "With --events: events a request.") var batch = 100

    func run() async throws {
        guard let wrk = BenchmarkProcesses.which("wrk") else {
            throw BenchmarkProcesses.Failure("wrk is missing: run scripts/install-dependencies.sh")
        }
        var configuration = try await HeraldConfiguration.load()
        let logger = Logger(label: "bench.api")
        let database = "herald_bench_api"
        try await HeraldDatabase.withClient(settings: configuration.postgres, logger: logger) { admin in
            try await admin.query("DROP DATABASE IF EXISTS \(unescaped: database) WITH (FORCE)", logger: logger)
            try await admin.query("CREATE DATABASE \(unescaped: database)", logger: logger)
        }
        configuration.postgres.database = database
        let admin = "bench-admin-\(UUID().uuidString)"
        let api = try BenchmarkProcesses.launch(
            binaries + "/herald-api", [], log: "/tmp/api-bench.log",
            environment: ProcessInfo.processInfo.environment.merging([
                "HERALD_POSTGRES_DATABASE": database, "HERALD_API_PORT": "\(port)", "HERALD_ADMIN_TOKEN": admin,
                "HERALD_API_RATE_LIMIT_PER_SECOND": "1000000", "HERALD_API_RATE_LIMIT_BURST": "1000000",
                "HERALD_LOG_LEVEL": "warning",
            ]) { $1 })
        defer { BenchmarkProcesses.stop(api) }
        let base = "http://127.0.0.1:\(port)"
        for _ in 0..<100 where !BenchmarkProcesses.isListening(port) { try await Task.sleep(for: .milliseconds(100)) }

        // One app with one device: every push targets it by registration id.
        let created = try Self.curl([
            "-X", "POST", "\(base)/v1/apps", "-H", "Authorization: Bearer \(admin)",
            "-H", "Content-Type: application/json", "-d", #"{"name":"bench","bundle_id":"com.herald.bench"}"#,
        ])
        let key = ((created["server_key"] as? [String: Any])?["key"] as? String) ?? ""
        let device = try Self.curl([
            "-X", "POST", "\(base)/v1/devices", "-H", "Authorization: Bearer \(key)",
            "-H", "Content-Type: application/json",
            "-d", #"{"token":"\#(String(repeating: "ab", count: 32))","environment":"production"}"#,
        ])
        guard let registrationID = (device["registration_id"] as? NSNumber)?.int64Value else {
            throw BenchmarkProcesses.Failure("could not register the device: \(device)")
        }
        if events {
            try await engagement(wrk: wrk, base: base, key: key, configuration: configuration, logger: logger)
            BenchmarkProcesses.stop(api)
            try await HeraldDatabase.withClient(settings: HeraldConfiguration.load().postgres, logger: logger) {
                admin in
                try await admin.query("DROP DATABASE IF EXISTS \(unescaped: database) WITH (FORCE)", logger: logger)
            }
            return
        }
        let script = "/tmp/api-bench-push.lua"
        try """
        wrk.method = "POST"
        wrk.headers["Authorization"] = "Bearer \(key)"
        wrk.headers["Content-Type"] = "application/json"
        wrk.body = '{"audience":{"registration_ids":[\(registrationID)]},"notification":{"alert":{"title":"Benchmark","body":"One device, one push"}}}'
        """.write(toFile: script, atomically: true, encoding: .utf8)

        print("herald-api: \(connections) connections, \(threads) wrk threads, \(duration) s per run")
        // Warm-up.
        _ = try Self.wrk(
            wrk, ["-t\(threads)", "-c\(connections)", "-d3s", "--latency", "-s", script, "\(base)/v1/pushes"])
        let health = try Self.wrk(
            wrk, ["-t\(threads)", "-c\(connections)", "-d\(duration)s", "--latency", "\(base)/healthz"])
        let pushes = try Self.wrk(
            wrk, ["-t\(threads)", "-c\(connections)", "-d\(duration)s", "--latency", "-s", script, "\(base)/v1/pushes"])
        print(health.line("GET /healthz (reference):"))
        print(pushes.line("POST /v1/pushes:"))

        let stored = try await HeraldDatabase.withClient(settings: configuration.postgres, logger: logger) { client in
            let rows = try await client.query("SELECT count(*) FROM pushes", logger: logger)
            var count: Int64 = 0
            for try await value in rows.decode(Int64.self) { count = value }
            return count
        }
        let accepted = pushes.rate - Double(pushes.errors) / Double(duration)
        print(
            String(
                format:
                    "accepted pushes/s: %.0f (target >= 5000: %@), p99 %.2f ms (target <= 25: %@); %.2f of /healthz's rate",
                accepted, accepted >= 5000 ? "met" : "missed", pushes.p99, pushes.p99 <= 25 ? "met" : "missed",
                pushes.rate / health.rate))
        print("pushes stored in PostgreSQL (warm-up included): \(stored)")
        BenchmarkProcesses.stop(api)
        try await HeraldDatabase.withClient(settings: HeraldConfiguration.load().postgres, logger: logger) { admin in
            try await admin.query("DROP DATABASE IF EXISTS \(unescaped: database) WITH (FORCE)", logger: logger)
        }
    }

    /// The --events run: devices and the batches of 4 pushes sent to them written in the
    /// database, then /healthz and POST /v1/events under the same load.
    func engagement(wrk: String, base: String, key: String, configuration: HeraldConfiguration, logger: Logger)
        async throws
    {
        // Enough (push, device, type) for every event of the run to be new: 12 pushes x 3 types x
        // 100,000 devices is 3.6 million.
        let pushIDs = try (0..<12).map { _ in
            let push = try Self.curl([
                "-X", "POST", "\(base)/v1/pushes", "-H", "Authorization: Bearer \(key)",
                "-H", "Content-Type: application/json",
                "-d", #"{"audience":{"all":true},"notification":{"alert":{"body":"Measured opens"}}}"#,
            ])
            guard let id = push["id"] as? String else { throw BenchmarkProcesses.Failure("push refused: \(push)") }
            return id
        }
        // Device i has the token of 28 zero bytes and i (big-endian): what the wrk script sends.
        do {
            try await written(pushIDs, configuration: configuration, logger: logger)
        } catch {
            throw BenchmarkProcesses.Failure("could not write the devices and batches: \(String(reflecting: error))")
        }
        let script = "/tmp/api-bench-events.lua"
        try """
        wrk.method = "POST"
        wrk.headers["Authorization"] = "Bearer \(key)"
        wrk.headers["Content-Type"] = "application/json"
        local pushes = {"\(pushIDs.joined(separator: "\", \""))"}
        local devices, size = \(devices), \(batch)
        local types = {"received", "opened", "dismissed"}
        local next = 0
        local step = 0
        -- Each thread walks its own share of the (push, type, device) space.
        function setup(thread) thread:set("first", step); step = step + 1 end
        function init(args) next = tonumber(first) * math.floor(devices * #pushes * #types / \(threads)) end
        -- Every request a batch of `size` events about `size` devices in a row, walking through
        -- (push, type, device); its events dated once.
        function request()
          local events = {}
          local now = os.date("!%Y-%m-%dT%H:%M:%SZ")
          for i = 1, size do
            local n = next
            next = next + 1
            local device = n % devices + 1
            local push = pushes[math.floor(n / devices) % #pushes + 1]
            local kind = types[math.floor(n / (devices * #pushes)) % #types + 1]
            events[i] = string.format('{"push_id":"%s","token":"%s%08x","type":"%s","occurred_at":"%s"}',
              push, string.rep("00", 28), device, kind, now)
          end
          return wrk.format(nil, "/v1/events", nil, '{"events":[' .. table.concat(events, ",") .. ']}')
        end
        """.write(toFile: script, atomically: true, encoding: .utf8)

        print(
            "herald-api: \(connections) connections, \(threads) wrk threads, \(duration) s per run, \(batch) events a request"
        )
        _ = try Self.wrk(
            wrk, ["-t\(threads)", "-c\(connections)", "-d3s", "--latency", "-s", script, "\(base)/v1/events"])
        let health = try Self.wrk(
            wrk, ["-t\(threads)", "-c\(connections)", "-d\(duration)s", "--latency", "\(base)/healthz"])
        let before = try await Self.storedEvents(configuration, logger)
        let reports = try Self.wrk(
            wrk, ["-t\(threads)", "-c\(connections)", "-d\(duration)s", "--latency", "-s", script, "\(base)/v1/events"])
        let stored = try await Self.storedEvents(configuration, logger) - before
        print(health.line("GET /healthz (reference):"))
        print(reports.line("POST /v1/events:"))
        let perSecond = Double(stored) / Double(duration)
        print(
            String(
                format:
                    "events stored/s: %.0f (%lld new events in %d s, of %.0f sent); events/s %.2f of /healthz's requests/s",
                perSecond, stored, duration, reports.rate * Double(batch) * Double(duration), perSecond / health.rate))
    }

    /// The devices (ids 1,000,001 on) and, for each push, its batches of 500 as herald-center
    /// writes them once APNs accepted every device.
    func written(_ pushIDs: [String], configuration: HeraldConfiguration, logger: Logger) async throws {
        try await HeraldDatabase.withClient(settings: configuration.postgres, logger: logger) { client in
            try await client.query(
                """
                INSERT INTO devices (id, app_id, token, environment, topic) OVERRIDING SYSTEM VALUE
                SELECT 1000000 + i, a.id, decode(repeat('00', 28) || lpad(to_hex(i), 8, '0'), 'hex'), 'production', a.bundle_id
                FROM apps a, generate_series(1, \(devices)) i
                """, logger: logger)
            for push in pushIDs {
                try await client.query(
                    """
                    INSERT INTO push_batches (push_id, sequence, first_device, last_device, target_count, completed_at, accepted_device_ids)
                    SELECT \(UUID(uuidString: push)!), s, 1000000 + s * 500 + 1, 1000000 + least((s + 1) * 500, \(devices)),
                           least(500, \(devices) - s * 500), now(),
                           ARRAY(SELECT 1000000 + g FROM generate_series(s * 500 + 1, least((s + 1) * 500, \(devices))) g)
                    FROM generate_series(0, (\(devices) - 1) / 500) s
                    """, logger: logger)
            }
        }
    }

    static func storedEvents(_ configuration: HeraldConfiguration, _ logger: Logger) async throws -> Int64 {
        try await HeraldDatabase.withClient(settings: configuration.postgres, logger: logger) { client in
            let rows = try await client.query("SELECT count(*) FROM push_engagement_events", logger: logger)
            var count: Int64 = 0
            for try await value in rows.decode(Int64.self) { count = value }
            return count
        }
    }

    struct WrkResult {
        var rate: Double
        var p50: Double
        var p99: Double
        var errors: Int

        /// `POST /v1/pushes:   4641 requests/s  p50  13.56 ms  p99  23.64 ms  non-2xx 0`.
        func line(_ label: String) -> String {
            label.padding(toLength: 26, withPad: " ", startingAt: 0)
                + String(
                    format: "%8.0f requests/s  p50 %6.2f ms  p99 %6.2f ms  non-2xx %d", rate, p50, p99, errors)
        }
    }

    /// Runs wrk and reads requests/s, the p50 and p99 latency (ms) and non-2xx answers from its report.
    static func wrk(_ path: String, _ arguments: [String]) throws -> WrkResult {
        let output = try BenchmarkProcesses.output(path, arguments)
        func milliseconds(_ text: String) -> Double {
            let value = Double(text.filter { $0.isNumber || $0 == "." }) ?? 0
            if text.hasSuffix("us") { return value / 1000 }
            if text.hasSuffix("ms") { return value }
            if text.hasSuffix("s") { return value * 1000 }
            return value
        }
        var result = WrkResult(rate: 0, p50: 0, p99: 0, errors: 0)
        for line in output.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            if fields.first == "Requests/sec:", fields.count > 1 { result.rate = Double(fields[1]) ?? 0 }
            if fields.first == "50%", fields.count > 1 { result.p50 = milliseconds(fields[1]) }
            if fields.first == "99%", fields.count > 1 { result.p99 = milliseconds(fields[1]) }
            if line.contains("Non-2xx or 3xx responses:"), let last = fields.last { result.errors = Int(last) ?? 0 }
        }
        return result
    }

    static func curl(_ arguments: [String]) throws -> [String: Any] {
        let output = try BenchmarkProcesses.output("/usr/bin/curl", ["-s"] + arguments)
        return (try? JSONSerialization.jsonObject(with: Data(output.utf8))) as? [String: Any] ?? [:]
    }
}
