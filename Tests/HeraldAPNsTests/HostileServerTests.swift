import APNsSimulator
import Foundation
import HeraldAPNs
import Logging
import NIOSSL
import ServiceLifecycle
import Synchronization
import Testing

/// An APNs that attacks its client (Tests/Security/hostile_apns.py, a real TLS + HTTP/2 server in
/// another process): malformed frames, a huge header block, CONTINUATION frames for ever, a
/// SETTINGS flood, a zero window, a flood of RST_STREAM. The client answers every notification
/// sent there (never accepted) within its request timeout, its memory stays bounded, it says what
/// happened in its log, and a client to a well-behaved APNs in the same process keeps delivering.
/// Ten notifications to most, three where each costs a request timeout.
@Suite("a hostile APNs server", .serialized)
struct HostileServerTests {
    enum Mode: String, CaseIterable, CustomTestStringConvertible {
        case garbage
        case hugeHeaders = "huge-headers"
        case endlessContinuation = "endless-continuation"
        case settingsFlood = "settings-flood"
        case zeroWindow = "zero-window"
        case rstFlood = "rst-flood"
        var testDescription: String { rawValue }

        /// Notifications sent to it: fewer where each costs a request timeout (a connection
        /// carries one stream until the server has answered once), so that a flood does not
        /// load the machine for long while other tests run.
        var notifications: Int {
            switch self {
            case .endlessContinuation, .zeroWindow: 3
            default: 10
            }
        }

        /// Every mode, or those named in `HERALD_HOSTILE_MODES` (comma-separated).
        static var chosen: [Mode] {
            guard let names = ProcessInfo.processInfo.environment["HERALD_HOSTILE_MODES"] else { return allCases }
            return names.split(separator: ",").compactMap { Mode(rawValue: String($0)) }
        }
    }

    /// The hostile server in a process of its own: its port and certificate file.
    final class HostileServer: Sendable {
        let process: Process
        let port: Int
        let certificate: String

        init(mode: Mode) throws {
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                .appendingPathComponent("../../Tests/Security/hostile_apns.py").standardized.path
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            process.arguments = [script, mode.rawValue]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            var line = Data()
            while !line.contains(UInt8(ascii: "\n")) {
                let byte = output.fileHandleForReading.readData(ofLength: 1)
                guard !byte.isEmpty else { break }
                line.append(byte)
            }
            let fields = Dictionary(
                uniqueKeysWithValues: String(decoding: line, as: UTF8.self).split(separator: " ").compactMap { field in
                    let parts = field.trimmingCharacters(in: .whitespacesAndNewlines).split(
                        separator: "=", maxSplits: 1)
                    return parts.count == 2 ? (String(parts[0]), String(parts[1])) : nil
                })
            self.process = process
            port = Int(fields["port"] ?? "") ?? 0
            certificate = fields["certificate"] ?? ""
        }

        func stop() {
            kill(process.processIdentifier, SIGKILL)
            var status: Int32 = 0
            waitpid(process.processIdentifier, &status, 0)
        }
    }

    /// What the client logged at warning or above.
    final class Lines: Sendable {
        let lines = Mutex<[String]>([])
    }

    struct Recorder: LogHandler {
        let lines: Lines
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level =
            ProcessInfo.processInfo.environment["HERALD_HOSTILE_PRINT"] != nil ? .trace : .warning
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            let text = "\(event.message) \(event.metadata.map { "\($0)" } ?? "")"
            lines.lines.withLock { $0.append(text) }
            if ProcessInfo.processInfo.environment["HERALD_HOSTILE_PRINT"] != nil {
                print("LOG \(event.level) \(text)")
            }
        }
    }

    static func residentBytes() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
        else { return 0 }
        return (Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) * 1024
    }

    @Test(
        "the sender's APNs client survives it with bounded memory, and its other clients keep working",
        arguments: Mode.chosen)
    func clientSurvives(mode: Mode) async throws {
        let server = try HostileServer(mode: mode)
        #expect(server.port > 0)
        let lines = Lines()
        var configuration = APNsClientConfiguration()
        configuration.connections = 1
        configuration.requestTimeout = .seconds(1)
        configuration.connectTimeout = .seconds(2)
        configuration.connectionSpacing = .milliseconds(10)
        configuration.reconnectBackoff = .init(initial: .milliseconds(50), maximum: .milliseconds(500))
        configuration.unprocessedResends = 1
        let hostile = try APNsClient(
            endpoint: APNsEndpoint(
                host: "localhost", port: server.port,
                trustedCertificates: try NIOSSLCertificate.fromPEMFile(server.certificate)),
            credential: .token(
                APNsSigningKey(privateKey: ClientFixture.key, keyID: ClientFixture.keyID, teamID: ClientFixture.teamID)),
            configuration: configuration,
            logger: Logger(label: "hostile") { _ in Recorder(lines: lines) })
        let group = ServiceGroup(services: [hostile], logger: .init(label: "test"))

        try await withClient { _, wellBehaved in
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { try await group.run() }
                if ProcessInfo.processInfo.environment["HERALD_HOSTILE_PRINT"] != nil {
                    let single = await hostile.send(ClientFixture.notification(0))
                    print("SINGLE \(single)")
                }
                let before = Self.residentBytes()
                let count = Int(ProcessInfo.processInfo.environment["HERALD_HOSTILE_COUNT"] ?? "") ?? mode.notifications
                async let attacked = hostile.send((0..<count).map { ClientFixture.notification($0) })
                async let delivered = wellBehaved.send((100..<300).map { ClientFixture.notification($0) })
                let (hostileResult, goodResult) = await (attacked, delivered)
                let grown = Self.residentBytes() - before

                let accepted = hostileResult.outcomes.filter { if case .accepted = $0 { true } else { false } }
                #expect(
                    hostileResult.outcomes.count == count && accepted.isEmpty,
                    "\(mode): \(hostileResult.outcomes.prefix(3))")
                #expect(
                    goodResult.outcomes.allSatisfy { if case .accepted = $0 { true } else { false } },
                    "the client of the well-behaved server delivers everything")
                #expect(grown < 512 << 20, "\(mode): resident memory grew by \(grown >> 20) MiB")
                let logged = lines.lines.withLock { $0 }
                #expect(!logged.isEmpty, "\(mode): the client says what happened")
                print(
                    "\(mode.rawValue): \(Set(hostileResult.outcomes.map { "\($0)" }).sorted().prefix(3)); RSS +\(grown >> 20) MiB; log: \(logged.first ?? "-")"
                )
                await group.triggerGracefulShutdown()
                try await tasks.waitForAll()
            }
        }
        server.stop()
    }
}
