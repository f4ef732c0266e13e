// apns-client-throughput: Herald's APNs client (HeraldAPNs over HeraldHTTP2) sending to apns-sim,
// against h2load sending the same requests to the same apns-sim in the same invocation.
//
// This measures the client library only: no Kafka, no PostgreSQL (the herald-sender worker is
// not built yet). It prints notifications/s for both, the client's CPU microseconds per
// notification (getrusage of this process; apns-sim runs in its own process) and peak RSS,
// with a final JSON line.
import APNsSimulator
import ArgumentParser
import BenchmarkSupport
import Crypto
import Foundation
import HeraldAPNs
import NIOPosix
import ServiceLifecycle
import Synchronization

@main
struct APNsClientThroughput: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apns-client-throughput",
        abstract: "Herald's APNs client against h2load, both sending to the same apns-sim.")

    @Option(help: "The apns-sim binary (release build).") var apnsSim = ".build/release/apns-sim"
    @Option(help: "Notifications per run.") var notifications = 200_000
    @Option(help: "Connections (client and h2load alike).") var connections = 4
    @Option(help: "Notifications in flight (client); streams per connection for h2load = this / connections.")
    var inFlight = 1000
    @Option(help: "Port for apns-sim.") var simPort = 22980

    func run() async throws {
        guard FileManager.default.isExecutableFile(atPath: apnsSim) else {
            throw ValidationError(
                "no apns-sim at \(apnsSim): build it with `swift build -c release --product apns-sim`")
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("apns-client-bench-\(getpid())").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let signingKey = P256.Signing.PrivateKey()
        try signingKey.publicKey.pemRepresentation.write(
            toFile: folder + "/key.pub.pem", atomically: true, encoding: .utf8)
        let key = APNsSigningKey(privateKey: signingKey, keyID: "BENCHKEY01", teamID: "BENCHTEAM1")
        let (identity, keyPEM) = try SimulatorIdentity.selfSigned()
        try identity.certificatePEM.write(toFile: folder + "/cert.pem", atomically: true, encoding: .utf8)
        try keyPEM.write(toFile: folder + "/key.pem", atomically: true, encoding: .utf8)
        let payload = #"{"aps":{"alert":{"title":"Herald","body":"A benchmark notification"},"sound":"default"}}"#
        try payload.write(toFile: folder + "/payload.json", atomically: true, encoding: .utf8)

        let simulator = try BenchmarkProcesses.launch(
            apnsSim,
            [
                // h2load does not wait for a raised stream limit; Herald's client keeps to one stream
                // per connection until its first success whatever the server advertises.
                "--port", "\(simPort)", "--no-admin", "--record", "counts", "--accept-any-token",
                "--streams-before-auth", "1000",
                "--certificate", folder + "/cert.pem", "--private-key", folder + "/key.pem",
                "--key", "BENCHKEY01:BENCHTEAM1:\(folder)/key.pub.pem:com.herald.bench", "--log-level", "warning",
            ])
        defer { BenchmarkProcesses.stop(simulator) }
        try await Task.sleep(for: .seconds(1))
        let token = String(repeating: "ab", count: 32)

        // The reference: h2load, the same requests, the same server.
        let h2loadRate = try BenchmarkProcesses.h2load(
            requests: notifications, connections: connections, streams: max(1, inFlight / connections),
            headers: [
                "authorization: bearer \(key.providerToken(issuedAt: Int64(Date().timeIntervalSince1970)))",
                "apns-topic: com.herald.bench", "apns-push-type: alert", "apns-priority: 10", "apns-collapse-id: bench",
            ],
            bodyFile: folder + "/payload.json", url: "https://127.0.0.1:\(simPort)/3/device/\(token)")

        // Herald's client.
        var configuration = APNsClientConfiguration()
        configuration.connections = connections
        configuration.maxInFlight = inFlight
        let client = try APNsClient(
            endpoint: APNsEndpoint(host: "127.0.0.1", port: simPort, trustedCertificates: identity.certificateChain),
            credential: .token(key), configuration: configuration)
        let services = ServiceGroup(services: [client], logger: .init(label: "bench"))
        let notification = APNsNotification(
            deviceToken: token, topic: "com.herald.bench", collapseID: "bench", payload: Array(payload.utf8))
        let total = notifications
        let (seconds, cpu, accepted) = try await withThrowingTaskGroup(of: Void.self) {
            group -> (Double, Double, Int) in
            group.addTask { try await services.run() }
            // Warm up: connections open and authenticate.
            for _ in 0..<connections * 10 { _ = await client.send(notification) }
            let counters = Counters()
            let cpuBefore = Self.cpuSeconds()
            let start = ContinuousClock.now
            await withTaskGroup(of: Void.self) { senders in
                for _ in 0..<inFlight {
                    senders.addTask {
                        while counters.next.add(1, ordering: .relaxed).oldValue < total {
                            if case .accepted = await client.send(notification) {
                                counters.accepted.add(1, ordering: .relaxed)
                            }
                        }
                    }
                }
            }
            let elapsed = ContinuousClock.now - start
            let cpu = Self.cpuSeconds() - cpuBefore
            await services.triggerGracefulShutdown()
            try await group.waitForAll()
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            return (seconds, cpu, counters.accepted.load(ordering: .relaxed))
        }
        guard accepted == total else {
            throw ValidationError("only \(accepted) of \(total) notifications were accepted")
        }
        let rate = Double(total) / seconds
        let cpuMicroseconds = cpu / Double(total) * 1e6
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let peakMB = Double(usage.ru_maxrss) / 1024
        print(String(format: "h2load:          %9.0f req/s", h2loadRate))
        print(
            String(
                format:
                    "Herald client:   %9.0f notifications/s (%.2f of h2load), %.1f µs CPU per notification, peak RSS %.0f MB",
                rate, rate / h2loadRate, cpuMicroseconds, peakMB))
        let result: [String: Any] = [
            "benchmark": "apns-client-throughput", "notifications": total, "connections": connections,
            "inFlight": inFlight,
            "h2loadRequestsPerSecond": Int(h2loadRate), "clientNotificationsPerSecond": Int(rate),
            "ratio": (rate / h2loadRate * 100).rounded() / 100,
            "clientCPUMicrosecondsPerNotification": (cpuMicroseconds * 10).rounded() / 10,
            "peakRSSMegabytes": Int(peakMB),
        ]
        print(
            String(decoding: try JSONSerialization.data(withJSONObject: result, options: [.sortedKeys]), as: UTF8.self))
    }

    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
            + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    }

}

/// Shared by the sending tasks (atomics cannot be captured directly).
final class Counters: Sendable {
    let next = Atomic<Int>(0)
    let accepted = Atomic<Int>(0)
}
