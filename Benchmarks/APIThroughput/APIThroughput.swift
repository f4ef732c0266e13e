// api-throughput: single-device pushes posted to a herald-api process at full speed by wrk for
// a while; prints accepted pushes/s and p50/p99 latency, and in the same run /healthz under the
// same load as the reference for the server's bare cost.
//
// Run it with `make bench-api` (release build, PostgreSQL up).
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
        print(
            String(
                format: "GET /healthz (reference): %8.0f requests/s  p50 %6.2f ms  p99 %6.2f ms  non-2xx %d",
                health.rate, health.p50, health.p99, health.errors))
        print(
            String(
                format: "POST /v1/pushes:          %8.0f requests/s  p50 %6.2f ms  p99 %6.2f ms  non-2xx %d",
                pushes.rate, pushes.p50, pushes.p99, pushes.errors))

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

    struct WrkResult {
        var rate: Double
        var p50: Double
        var p99: Double
        var errors: Int
    }

    /// Runs wrk and reads requests/s, the p50 and p99 latency (ms) and non-2xx answers from its report.
    static func wrk(_ path: String, _ arguments: [String]) throws -> WrkResult {
        let output = try run(path, arguments)
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
        let output = try run("/usr/bin/curl", ["-s"] + arguments)
        return (try? JSONSerialization.jsonObject(with: Data(output.utf8))) as? [String: Any] ?? [:]
    }

    static func run(_ path: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }
}
