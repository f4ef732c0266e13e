// apns-sim-throughput: requests per second of apns-sim against nghttpd (the C reference: the
// same nghttp2 library serving a static 200), both loaded by h2load over TLS in one invocation.
//
// Scenarios: 1 connection × 1000 streams and 4 connections × 250 streams, N requests each
// (default 200,000), several rounds alternating the two servers; the median of each is
// reported, and a final JSON line carries every figure. Both servers run one event-loop thread
// (nghttpd's default), so the comparison is server against server on the same core budget.
import APNsSimulator
import ArgumentParser
import BenchmarkSupport
import Crypto
import Foundation
import HeraldAPNs
import HeraldAPNsVocabulary

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
        for tool in ["h2load", "nghttpd"] where BenchmarkProcesses.which(tool) == nil {
            throw ValidationError(
                "\(tool) is missing: install Debian's nghttp2-client and nghttp2-server (scripts/install-dependencies.sh)"
            )
        }
        guard FileManager.default.isExecutableFile(atPath: apnsSim) else {
            throw ValidationError(
                "no apns-sim at \(apnsSim): build it with `swift build -c release --product apns-sim`")
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("apns-sim-bench-\(getpid())").path
        try FileManager.default.createDirectory(atPath: folder + "/htdocs/3/device", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }

        for port in [simPort, nghttpdPort] where BenchmarkProcesses.isListening(port) {
            throw ValidationError(
                "port \(port) is already in use (a server left from an earlier run?): stop it or pick another with --sim-port/--nghttpd-port"
            )
        }

        // A signing key apns-sim trusts, a provider token, a certificate for nghttpd.
        let signingKey = P256.Signing.PrivateKey()
        try signingKey.publicKey.pemRepresentation.write(
            toFile: folder + "/key.pub.pem", atomically: true, encoding: .utf8)
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
        let simulator = try BenchmarkProcesses.launch(
            apnsSim,
            [
                "--port", "\(simPort)", "--no-admin", "--threads", "\(simThreads)", "--record", "counts",
                "--accept-any-token", "--streams-before-auth", "1000", "--max-concurrent-streams", "1000",
                "--certificate", folder + "/cert.pem", "--private-key", folder + "/key.pem",
                "--key", "BENCHKEY01:BENCHTEAM1:\(folder)/key.pub.pem:com.herald.bench", "--log-level", "warning",
            ])
        let nghttpd = try BenchmarkProcesses.launch(
            BenchmarkProcesses.which("nghttpd")!,
            [
                "\(nghttpdPort)", folder + "/key.pem", folder + "/cert.pem", "-d", folder + "/htdocs", "-n", "1",
                "--max-concurrent-streams", "1000",
            ])
        defer {
            BenchmarkProcesses.stop(simulator, grace: .seconds(2))
            BenchmarkProcesses.stop(nghttpd, grace: .seconds(2))
        }
        try await Task.sleep(for: .seconds(1))

        let headers = [
            "authorization: bearer \(token)", "apns-topic: com.herald.bench", "apns-push-type: alert",
            "apns-priority: 10",
        ]
        var scenarios: [[String: Any]] = []
        for (connections, streams) in [(1, 1000), (4, 250)] {
            var simulatorRates: [Double] = []
            var nghttpdRates: [Double] = []
            for round in 0..<rounds {
                let order = round % 2 == 0 ? [true, false] : [false, true]
                for isSimulator in order {
                    let port = isSimulator ? simPort : nghttpdPort
                    let rate = try BenchmarkProcesses.h2load(
                        requests: requests, connections: connections, streams: streams, headers: headers,
                        bodyFile: folder + "/payload.json", url: "https://127.0.0.1:\(port)/3/device/\(deviceToken)")
                    if isSimulator { simulatorRates.append(rate) } else { nghttpdRates.append(rate) }
                    print(
                        String(
                            format: "  %d×%d round %d  %@  %9.0f req/s", connections, streams, round + 1,
                            isSimulator ? "apns-sim" : "nghttpd ", rate))
                }
            }
            let simulatorMedian = BenchmarkProcesses.median(simulatorRates)
            let nghttpdMedian = BenchmarkProcesses.median(nghttpdRates)
            let ratio = simulatorMedian / nghttpdMedian
            print(
                String(
                    format: "%d connection(s) × %d streams: apns-sim %.0f req/s, nghttpd %.0f req/s, ratio %.2f",
                    connections, streams, simulatorMedian, nghttpdMedian, ratio))
            scenarios.append([
                "connections": connections, "streamsPerConnection": streams, "requests": requests,
                "apnsSimRequestsPerSecond": Int(simulatorMedian), "nghttpdRequestsPerSecond": Int(nghttpdMedian),
                "ratio": (ratio * 100).rounded() / 100,
                "apnsSimRuns": simulatorRates.map { Int($0) }, "nghttpdRuns": nghttpdRates.map { Int($0) },
            ])
        }
        let result: [String: Any] = [
            "benchmark": "apns-sim-throughput", "target": 0.7, "simThreads": simThreads, "scenarios": scenarios,
        ]
        print(
            String(decoding: try JSONSerialization.data(withJSONObject: result, options: [.sortedKeys]), as: UTF8.self))
    }

}
