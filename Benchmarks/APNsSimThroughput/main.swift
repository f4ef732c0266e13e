// apns-sim-throughput: requests per second of apns-sim against nghttpd (the C reference: the
// same nghttp2 library serving a static 200), both loaded by h2load over TLS in one invocation.
//
// Scenarios: 1 connection × 1000 streams and 4 connections × 250 streams, N requests each
// (default 200,000), several rounds alternating the two servers; the median of each is
// reported, and a final JSON line carries every figure. Both servers run one event-loop thread
// (nghttpd's default), so the comparison is server against server on the same core budget.
import APNsSimulator
import HeraldAPNs
import ArgumentParser
import Crypto
import Foundation

@main
struct APNsSimThroughput: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apns-sim-throughput",
        abstract: "h2load against apns-sim and against nghttpd, same requests, same machine.")

    @Option(help: "The apns-sim binary (release build).") var apnsSim = ".build/release/apns-sim"
    @Option(help: "Requests per run.") var requests = 200_000
    @Option(help: "Rounds per scenario (the median is reported).") var rounds = 3
    @Option(help: "Event-loop threads for apns-sim (nghttpd uses 1).") var simThreads = 1
    @Option(help: "Port for apns-sim.") var simPort = 22970
    @Option(help: "Port for nghttpd.") var nghttpdPort = 22990

    func run() async throws {
        for tool in ["h2load", "nghttpd"] where which(tool) == nil {
            throw ValidationError("\(tool) is missing: install Debian's nghttp2-client and nghttp2-server (scripts/install-dependencies.sh)")
        }
        guard FileManager.default.isExecutableFile(atPath: apnsSim) else {
            throw ValidationError("no apns-sim at \(apnsSim): build it with `swift build -c release --product apns-sim`")
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("apns-sim-bench-\(getpid())").path
        try FileManager.default.createDirectory(atPath: folder + "/htdocs/3/device", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }

        for port in [simPort, nghttpdPort] where isListening(port) {
            throw ValidationError("port \(port) is already in use (a server left from an earlier run?): stop it or pick another with --sim-port/--nghttpd-port")
        }

        // A signing key apns-sim trusts, a provider token, a certificate for nghttpd.
        let signingKey = P256.Signing.PrivateKey()
        try signingKey.publicKey.pemRepresentation.write(toFile: folder + "/key.pub.pem", atomically: true, encoding: .utf8)
        let token = APNsSigningKey(privateKey: signingKey, keyID: "BENCHKEY01", teamID: "BENCHTEAM1")
            .providerToken(issuedAt: Int64(Date().timeIntervalSince1970))
        let (identity, keyPEM) = try SimulatorIdentity.selfSigned()
        try identity.certificatePEM.write(toFile: folder + "/cert.pem", atomically: true, encoding: .utf8)
        try keyPEM.write(toFile: folder + "/key.pem", atomically: true, encoding: .utf8)
        let deviceToken = String(repeating: "ab", count: 32)
        try Data().write(to: URL(fileURLWithPath: folder + "/htdocs/3/device/\(deviceToken)"))
        try Data(#"{"aps":{"alert":{"title":"Herald","body":"A benchmark notification"},"sound":"default"}}"#.utf8)
            .write(to: URL(fileURLWithPath: folder + "/payload.json"))

        // h2load does not wait for a raised stream limit, so apns-sim starts at its full limit
        // here (--streams-before-auth 1000); everything else is as in production use.
        let simulator = try launch(apnsSim, [
            "--port", "\(simPort)", "--no-admin", "--threads", "\(simThreads)", "--record", "counts",
            "--accept-any-token", "--streams-before-auth", "1000", "--max-concurrent-streams", "1000",
            "--certificate", folder + "/cert.pem", "--private-key", folder + "/key.pem",
            "--key", "BENCHKEY01:BENCHTEAM1:\(folder)/key.pub.pem:com.herald.bench", "--log-level", "warning",
        ])
        let nghttpd = try launch(which("nghttpd")!, [
            "\(nghttpdPort)", folder + "/key.pem", folder + "/cert.pem", "-d", folder + "/htdocs", "-n", "1",
            "--max-concurrent-streams", "1000",
        ])
        defer {
            stop(simulator)
            stop(nghttpd)
        }
        try await Task.sleep(for: .seconds(1))

        let headers = ["-H", "authorization: bearer \(token)", "-H", "apns-topic: com.herald.bench",
                       "-H", "apns-push-type: alert", "-H", "apns-priority: 10", "-d", folder + "/payload.json"]
        var scenarios: [[String: Any]] = []
        for (connections, streams) in [(1, 1000), (4, 250)] {
            var simulatorRates: [Double] = [], nghttpdRates: [Double] = []
            for round in 0..<rounds {
                let order = round % 2 == 0 ? [true, false] : [false, true]
                for isSimulator in order {
                    let port = isSimulator ? simPort : nghttpdPort
                    let rate = try h2load(connections: connections, streams: streams, headers: headers,
                                          url: "https://127.0.0.1:\(port)/3/device/\(deviceToken)")
                    if isSimulator { simulatorRates.append(rate) } else { nghttpdRates.append(rate) }
                    print(String(format: "  %d×%d round %d  %@  %9.0f req/s", connections, streams, round + 1,
                                 isSimulator ? "apns-sim" : "nghttpd ", rate))
                }
            }
            let simulatorMedian = median(simulatorRates), nghttpdMedian = median(nghttpdRates)
            let ratio = simulatorMedian / nghttpdMedian
            print(String(format: "%d connection(s) × %d streams: apns-sim %.0f req/s, nghttpd %.0f req/s, ratio %.2f",
                         connections, streams, simulatorMedian, nghttpdMedian, ratio))
            scenarios.append([
                "connections": connections, "streamsPerConnection": streams, "requests": requests,
                "apnsSimRequestsPerSecond": Int(simulatorMedian), "nghttpdRequestsPerSecond": Int(nghttpdMedian),
                "ratio": (ratio * 100).rounded() / 100,
                "apnsSimRuns": simulatorRates.map { Int($0) }, "nghttpdRuns": nghttpdRates.map { Int($0) },
            ])
        }
        let result: [String: Any] = ["benchmark": "apns-sim-throughput", "target": 0.7, "simThreads": simThreads, "scenarios": scenarios]
        print(String(decoding: try JSONSerialization.data(withJSONObject: result, options: [.sortedKeys]), as: UTF8.self))
    }

    /// Runs h2load and returns its requests per second; throws unless every request got a 2xx.
    func h2load(connections: Int, streams: Int, headers: [String], url: String) throws -> Double {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: which("h2load")!)
        process.arguments = ["-n", "\(requests)", "-c", "\(connections)", "-m", "\(streams)"] + headers + [url]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard output.contains("\(requests) succeeded"), output.contains("status codes: \(requests) 2xx"),
              let line = output.split(separator: "\n").first(where: { $0.hasPrefix("finished in") }),
              let rate = line.split(separator: ",").dropFirst().first?.split(separator: " ").first.flatMap({ Double($0) })
        else { throw ValidationError("h2load against \(url) did not get \(requests) 2xx answers:\n\(output)") }
        return rate
    }

    func launch(_ path: String, _ arguments: [String]) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// SIGTERM, then SIGKILL if the process is still there after two seconds (nghttpd does not
    /// always exit on SIGTERM while connections linger).
    func stop(_ process: Process) {
        let pid = process.processIdentifier
        kill(pid, SIGTERM)
        for _ in 0..<40 {
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid { return }
            usleep(50_000)
        }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }

    /// Whether something accepts TCP connections on 127.0.0.1:`port`.
    func isListening(_ port: Int) -> Bool {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    func which(_ tool: String) -> String? {
        var folders = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":").map(String.init)
        folders.append("/usr/sbin")
        for folder in folders {
            let path = "\(folder)/\(tool)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
    }
}
