import Foundation
import HeraldCore
import Testing

@Suite("herald-api refuses settings it cannot run safely with, at a real start")
struct APIProcessTests {
    /// Runs the built herald-api with `environment` added and returns its exit status and
    /// standard error, or nil if it was still running after 20 s (then it is stopped). Waits
    /// with `Task.sleep`, never blocking one of the cooperative pool's few threads (a blocked
    /// thread starved timing-sensitive tests running beside it).
    static func start(with environment: [String: String]) async throws -> (status: Int32, errors: String)? {
        let process = Process()
        let binaries = ProcessInfo.processInfo.environment["HERALD_BIN_DIR"] ?? ".build/debug"
        process.executableURL = URL(fileURLWithPath: binaries + "/herald-api")
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(20)
        while process.isRunning, Date() < deadline { try await Task.sleep(for: .milliseconds(50)) }
        guard !process.isRunning else {
            process.terminate()
            process.waitUntilExit()
            return nil
        }
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return (process.terminationStatus, text)
    }

    @Test("an admin token shorter than 32 random bytes: one line that says how to make one, exit 2")
    func shortAdminToken() async throws {
        let result = try #require(
            try await Self.start(with: ["HERALD_ADMIN_TOKEN": "letmein", "HERALD_API_PORT": "0"]))
        #expect(result.status == 2)
        #expect(
            result.errors.trimmingCharacters(in: .whitespacesAndNewlines)
                == "herald-api: HERALD_ADMIN_TOKEN is 7 characters; it must be at least 43 (32 random bytes, e.g. `openssl rand -base64 32`)"
        )
        #expect(!result.errors.contains("letmein"), "the token itself is never printed")
    }

    @Test("PostgreSQL over verify-full to a host name its certificate does not list: one line, no password, exit 2")
    func postgresCertificateForAnotherName() async throws {
        let result = try #require(
            try await Self.start(with: [
                "HERALD_API_PORT": "0", "HERALD_POSTGRES_HOST": "127.0.0.1", "HERALD_POSTGRES_TLS_MODE": "verify-full",
                "HERALD_POSTGRES_TLS_CA_FILE": ".local/postgres/tls/ca.crt",
            ]))
        #expect(result.status == 2)
        let lines = result.errors.split(separator: "\n")
        #expect(lines.count == 1, "\(result.errors)")
        #expect(result.errors.contains("the server's certificate does not name \"127.0.0.1\""))
        let password = ProcessInfo.processInfo.environment["HERALD_POSTGRES_PASSWORD"] ?? "herald-dev"
        #expect(!result.errors.contains(password))
    }

    @Test("the setting's rule, without a process")
    func rule() {
        var security = SecuritySettings(masterKey: nil, adminToken: String(repeating: "x", count: 43))
        #expect(throws: Never.self) { try security.checkAdminToken() }
        security.adminToken = nil
        #expect(throws: Never.self) { try security.checkAdminToken() }
        security.adminToken = String(repeating: "x", count: 42)
        #expect(throws: SettingError.self) { try security.checkAdminToken() }
    }

    @Test("with HERALD_LOG_FORMAT=json every line herald-api writes is a JSON object, its fatal one included")
    func jsonLines() async throws {
        let result = try #require(
            try await Self.start(with: [
                "HERALD_LOG_FORMAT": "json", "HERALD_API_PORT": "0", "HERALD_POSTGRES_PORT": "1",
                "HERALD_ADMIN_TOKEN": String(repeating: "a", count: 43),
            ]))
        #expect(result.status == 2)
        let lines = result.errors.split(separator: "\n")
        #expect(!lines.isEmpty)
        for line in lines {
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(object?["level"] != nil && object?["message"] != nil, "not a JSON log line: \(line)")
        }
        let last = try #require(
            lines.last.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] })
        #expect(last["level"] as? String == "critical")
        #expect((last["message"] as? String)?.contains("cannot use PostgreSQL at") == true)
    }

    @Test("an unknown log format: one line, exit 2")
    func unknownLogFormat() async throws {
        let result = try #require(try await Self.start(with: ["HERALD_LOG_FORMAT": "xml", "HERALD_API_PORT": "0"]))
        #expect(result.status == 2)
        #expect(result.errors.hasPrefix("herald-api: HERALD_LOG_FORMAT is \"xml\""))
    }

    @Test("by default herald-api listens on every interface, not only loopback")
    func listensOnEveryInterface() async throws {
        let address = try #require(Self.nonLoopbackIPv4(), "this test needs a network interface besides loopback")
        let port = Int.random(in: 29000..<30000)  // below the ephemeral range (32768 up), as SenderProcessTests
        let process = Process()
        let binaries = ProcessInfo.processInfo.environment["HERALD_BIN_DIR"] ?? ".build/debug"
        process.executableURL = URL(fileURLWithPath: binaries + "/herald-api")
        var environment = ProcessInfo.processInfo.environment
        environment["HERALD_API_PORT"] = "\(port)"
        environment["HERALD_API_HOST"] = nil
        process.environment = environment
        process.standardError = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        defer {
            process.terminate()
            process.waitUntilExit()
        }
        var status = 0
        let deadline = ContinuousClock.now + .seconds(30)
        while status != 200, ContinuousClock.now < deadline, process.isRunning {
            try await Task.sleep(for: .milliseconds(100))
            status = try await Self.httpStatus("http://\(address):\(port)/healthz")
        }
        #expect(status == 200, "GET /healthz through \(address)")
    }

    /// The first IPv4 address of an interface other than loopback.
    static func nonLoopbackIPv4() -> String? {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return nil }
        defer { freeifaddrs(list) }
        for entry in sequence(first: first, next: { $0.pointee.ifa_next }) {
            guard let address = entry.pointee.ifa_addr, address.pointee.sa_family == sa_family_t(AF_INET) else {
                continue
            }
            var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            guard
                getnameinfo(
                    address, socklen_t(MemoryLayout<sockaddr_in>.size), &host, socklen_t(host.count), nil, 0,
                    NI_NUMERICHOST) == 0
            else { continue }
            let text = String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if !text.hasPrefix("127.") { return text }
        }
        return nil
    }

    /// The HTTP status curl gets from `url` (0 when nothing answers), waited for with Task.sleep.
    static func httpStatus(_ url: String) async throws -> Int {
        let curl = Process()
        curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        curl.arguments = ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "2", url]
        let output = Pipe()
        curl.standardOutput = output
        try curl.run()
        while curl.isRunning { try await Task.sleep(for: .milliseconds(20)) }
        return Int(String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)) ?? 0
    }
}
