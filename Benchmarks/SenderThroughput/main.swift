// sender-throughput: herald-sender end to end on one machine. A million notifications wait in
// Kafka as 2,000 job batches of 500 targets; one herald-sender process (release build) sends them
// to apns-sim and publishes their outcomes. It prints notifications/s from the moment the sender
// has its partitions to the last outcome (and from the process's start, which adds the broker's
// first-join delay), the sender's CPU microseconds per notification and its peak RSS, and — in the
// same run, as the reference — h2load's requests/s against the same apns-sim.
//
// Run it through `make bench-sender` (PostgreSQL and the development broker started fresh by
// scripts/with-infrastructure.sh; HERALD_BIN_DIR names the release binaries).
import APNsSimulator
import ArgumentParser
import BenchmarkSupport
import Crypto
import Foundation
import HeraldAPNs
import HeraldCore
import HeraldDomain
import HeraldKafka
import HeraldMessaging
import HeraldRecords
import HeraldStore
import Logging

@main
struct SenderThroughput: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sender-throughput",
        abstract: "herald-sender through Kafka to apns-sim, against h2load to the same apns-sim.")

    @Option(help: "Job batches.") var batches = 2000
    @Option(help: "Targets per batch.") var targets = 500
    @Option(help: "Requests for the h2load reference run.") var h2loadRequests = 200_000
    @Option(help: "Port for apns-sim.") var simPort = 22960
    @Option(help: "herald-sender processes sharing the backlog (make bench-scale runs 1, 2 and 4).") var senders = 1
    @Option(help: "apns-sim's faults as JSON, e.g. its latency (make bench-sender-latency).") var faults: String?
    @Option(help: "h2load's connections (match the sender's to compare like with like).") var h2loadConnections = 4
    @Option(help: "h2load's streams per connection.") var h2loadStreams = 250

    func run() async throws {
        let binaries = ProcessInfo.processInfo.environment["HERALD_BIN_DIR"] ?? ".build/release"
        let configuration = try await HeraldConfiguration.load()
        let logger = Logger(label: "bench.sender")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sender-bench-\(getpid())").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }

        // apns-sim, trusting the app's key, every token deliverable, counting only.
        let signingKey = P256.Signing.PrivateKey()
        let bundleID = "com.herald.bench"
        try signingKey.publicKey.pemRepresentation.write(
            toFile: folder + "/key.pub.pem", atomically: true, encoding: .utf8)
        let (identity, keyPEM) = try SimulatorIdentity.selfSigned()
        try identity.certificatePEM.write(toFile: folder + "/cert.pem", atomically: true, encoding: .utf8)
        try keyPEM.write(toFile: folder + "/key.pem", atomically: true, encoding: .utf8)
        let simulator = try BenchmarkProcesses.launch(
            binaries + "/apns-sim",
            [
                "--port", "\(simPort)", "--no-admin", "--record", "counts", "--accept-any-token",
                "--streams-before-auth", "1000",
                "--certificate", folder + "/cert.pem", "--private-key", folder + "/key.pem",
                "--key", "BENCHKEY01:BENCHTEAM1:\(folder)/key.pub.pem:\(bundleID)", "--log-level", "warning",
            ] + (faults.map { ["--faults", $0] } ?? []), log: folder + "/apns-sim.log")
        defer { BenchmarkProcesses.stop(simulator) }
        try await Task.sleep(for: .seconds(1))

        // The reference: h2load, same server, 4 connections × 250 streams (or as given); two runs now and one
        // after the sender's, the median taken (a single run moves with the machine: 137,000 and
        // 224,000 req/s within ten minutes, which made one sender run read 1.01 of h2load).
        let payload = #"{"aps":{"alert":{"title":"Herald","body":"A benchmark notification"},"sound":"default"}}"#
        try payload.write(toFile: folder + "/payload.json", atomically: true, encoding: .utf8)
        let key = APNsSigningKey(privateKey: signingKey, keyID: "BENCHKEY01", teamID: "BENCHTEAM1")
        let providerToken = key.providerToken(issuedAt: Int64(Date().timeIntervalSince1970))
        let reference = {
            try BenchmarkProcesses.h2loadRun(
                requests: h2loadRequests, connections: h2loadConnections, streams: h2loadStreams,
                headers: [
                    "authorization: bearer \(providerToken)", "apns-topic: \(bundleID)", "apns-push-type: alert",
                    "apns-priority: 10",
                ],
                bodyFile: folder + "/payload.json",
                url: "https://127.0.0.1:\(simPort)/3/device/\(String(repeating: "ab", count: 32))")
        }
        var h2loadRuns = [try reference(), try reference()]
        for run in h2loadRuns {
            print(
                String(
                    format: "h2load against apns-sim: %.0f req/s, %.1f µs of h2load's CPU per request", run.rate,
                    run.cpuMicrosecondsPerRequest))
        }

        // The app and its sealed key in PostgreSQL.
        // The cluster's key (scripts/with-infrastructure.sh sets it): herald-sender checks that
        // it sealed the database's credentials.
        let masterKey =
            ProcessInfo.processInfo.environment["HERALD_MASTER_KEY"]
            ?? Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        let cipher = try CredentialCipher(masterKeyBase64: masterKey)
        // The push the batches belong to: herald-sender sends nothing no stored push stands behind.
        let pushID = UUID()
        let appID = try await HeraldDatabase.withClient(settings: configuration.postgres, logger: logger) { database in
            try await MigrationRunner(client: database, logger: logger).migrate()
            let app = try await AppRepository(client: database, logger: logger).create(
                name: "sender benchmark", bundleID: bundleID)
            try await CredentialRepository(client: database, logger: logger).upsert(
                .token(
                    appID: app.id, environment: .sandbox, keyID: "BENCHKEY01", teamID: "BENCHTEAM1",
                    privateKeyPEM: signingKey.pemRepresentation, cipher: cipher))
            _ = try await PushRepository(client: database, logger: logger).create(
                NewPush(
                    id: pushID, appID: app.id, audienceJSON: "{}", notificationJSON: "{}", payload: Array(payload.utf8)),
                announcement: .init(topic: "herald.bench.pushes", key: nil, value: []))
            return app.id
        }

        // A million notifications waiting in herald.jobs.
        let trace = TraceContext.start()
        let pushIDBytes = pushID.recordBytes
        let appIDBytes = appID.recordBytes
        let producer = try KafkaProducer(
            configuration: configuration.kafka.producerConfiguration(clientID: "bench-jobs"), logger: logger)
        var batchIDs = Set<Data>()
        for chunk in stride(from: 0, to: batches, by: 100) {
            let records = try (chunk..<min(chunk + 100, batches)).map { sequence -> KafkaProducerMessage in
                let batch = Herald_V1_JobBatch(
                    pushID: pushIDBytes, appID: appIDBytes, sequence: UInt32(sequence), environment: .sandbox,
                    apnsTopic: bundleID,
                    pushType: .alert, priority: 10, expirationS: 0, collapseID: "", payload: Data(payload.utf8),
                    targets: (0..<targets).map { index in
                        let device = sequence * targets + index + 1
                        return Herald_V1_JobBatch.Target(
                            deviceID: UInt64(device),
                            token: withUnsafeBytes(of: UInt64(device).bigEndian) { Data($0) }
                                + Data(repeating: 0xAB, count: 24))
                    },
                    createdAtMs: Int64(Date().timeIntervalSince1970 * 1000))
                batchIDs.insert(batch.batchID)
                // As herald-center writes them: each record carries the push's trace context.
                return KafkaProducerMessage(
                    topic: HeraldTopic.jobs.name, key: Array(batch.batchID), value: try batch.encodedRecord(),
                    headers: [KafkaHeader(continuing: trace)])
            }
            try await producer.send(records)
        }
        await producer.shutdown()
        let total = batches * targets
        print("\(total) notifications in \(batches) job batches waiting in \(HeraldTopic.jobs.name)")

        // herald-sender, started now; the clock runs until the last outcome is read.
        var variables = ProcessInfo.processInfo.environment
        variables["HERALD_MASTER_KEY"] = masterKey
        variables["HERALD_SENDER_GROUP_ID"] = "bench-sender-\(pushID.uuidString.prefix(8))"
        variables["HERALD_SENDER_APNS_SANDBOX_HOST"] = "127.0.0.1"
        variables["HERALD_SENDER_APNS_SANDBOX_PORT"] = "\(simPort)"
        variables["HERALD_SENDER_APNS_SANDBOX_TRUST_CERTIFICATE_FILE"] = folder + "/cert.pem"
        variables["HERALD_SENDER_METRICS_PORT"] = "0"
        // Info level: quiet per batch, and it says when the consumer group assigned the partitions.
        variables["HERALD_LOG_LEVEL"] = "info"
        let start = ContinuousClock.now
        let senderProcesses = try (1...max(1, senders)).map { index in
            try BenchmarkProcesses.launch(
                binaries + "/herald-sender", [], log: folder + "/sender-\(index).log", environment: variables)
        }
        defer { for sender in senderProcesses { BenchmarkProcesses.stop(sender) } }
        let assignment = Task {
            await Self.waitForLine(
                "Kafka partitions assigned", inFiles: (1...max(1, senders)).map { folder + "/sender-\($0).log" })
        }

        let reader = try KafkaConsumer(
            configuration: configuration.kafka.consumerConfiguration(
                groupID: "bench-reader-\(pushID.uuidString.prefix(8))", topics: [HeraldTopic.outcomes.name],
                clientID: "bench-reader"),
            logger: logger)
        var seen = Set<Data>()
        var accepted = 0
        var firstOutcome: ContinuousClock.Instant?
        var failureReasons: [String: Int] = [:]
        var peakRSS = 0
        var outcomes = reader.messages.makeAsyncIterator()
        while seen.count < batches {
            guard let message = try await outcomes.next() else { break }
            let outcome = try Herald_V1_OutcomeBatch.decodeRecord(message.value)
            if outcome.pushID == pushIDBytes, seen.insert(outcome.batchID).inserted {
                accepted += outcome.acceptedDeviceIds.count
                for failure in outcome.failures {
                    failureReasons["\(failure.status) \(failure.reason)", default: 0] += 1
                }
                if firstOutcome == nil { firstOutcome = ContinuousClock.now }
            }
            if seen.count % 100 == 0 {
                for sender in senderProcesses {
                    peakRSS = max(peakRSS, Self.residentKilobytes(sender.processIdentifier, field: "VmHWM:"))
                }
            }
            if let stopped = senderProcesses.firstIndex(where: { !$0.isRunning }) {
                throw ValidationError(
                    "herald-sender \(stopped + 1) exited early; see \(folder)/sender-\(stopped + 1).log")
            }
        }
        let finished = ContinuousClock.now
        let elapsed = finished - start
        for sender in senderProcesses {
            peakRSS = max(peakRSS, Self.residentKilobytes(sender.processIdentifier, field: "VmHWM:"))
        }
        let cpuSeconds = senderProcesses.map { BenchmarkProcesses.cpuSeconds(of: $0.processIdentifier) }.reduce(0, +)
        try await reader.close()
        // The third reference, the senders idle (still running: no child exits while h2load's CPU
        // is measured).
        h2loadRuns.append(try reference())
        print(
            String(
                format: "h2load against apns-sim, after: %.0f req/s, %.1f µs of h2load's CPU per request",
                h2loadRuns[2].rate, h2loadRuns[2].cpuMicrosecondsPerRequest))
        let h2load = BenchmarkProcesses.H2LoadRun(
            rate: h2loadRuns.map(\.rate).sorted()[1],
            cpuMicrosecondsPerRequest: h2loadRuns.map(\.cpuMicrosecondsPerRequest).sorted()[1])
        let h2loadRate = h2load.rate
        print(
            String(
                format: "h2load, the median of three: %.0f req/s, %.1f µs of CPU per request", h2loadRate,
                h2load.cpuMicrosecondsPerRequest))
        guard accepted == total else {
            let log = (try? String(contentsOfFile: folder + "/sender-1.log", encoding: .utf8)) ?? ""
            throw ValidationError(
                "only \(accepted) of \(total) notifications accepted; failures: \(failureReasons); sender log:\n\(log.suffix(3000))"
            )
        }

        let seconds = Self.seconds(elapsed)
        let rate = Double(total) / seconds
        assignment.cancel()
        // The headline: from the group's assignment to the last outcome. Before it, the process
        // starts and joins the consumer group; the development broker (librdkafka's mock) holds a
        // group's first join for a fixed 3 s, as a real broker does with its default
        // group.initial.rebalance.delay.ms — once per group, not per notification.
        let assignedAt = await assignment.value ?? start
        let working = Self.seconds(finished - assignedAt)
        let workingRate = Double(total) / working
        // Steady state: from the first outcome to the last (start-up, migrations, the group join and
        // the first TLS handshakes excluded).
        let steadyRate = Double(total - targets) / Self.seconds(finished - (firstOutcome ?? start))
        let microseconds = cpuSeconds / Double(total) * 1e6
        print(
            String(
                format:
                    "herald-sender × %d: %d notifications in %.1f s from the first partition assignment = %.0f/s (%.2f of h2load, target ≥ 0.75: %@), %.1f µs CPU each (all senders), peak RSS %.0f MB (largest sender)",
                senderProcesses.count, total, working, workingRate, workingRate / h2loadRate,
                workingRate / h2loadRate >= 0.75 ? "met" : "NOT met", microseconds,
                Double(peakRSS) / 1024))
        print(
            String(
                format:
                    "  from the process's start (the broker's first-join delay included): %.1f s = %.0f/s (%.2f of h2load)",
                seconds, rate, rate / h2loadRate))
        print(
            String(
                format: "  steady state (first outcome to last): %.0f/s (%.2f of h2load)", steadyRate,
                steadyRate / h2loadRate))
        let cpuRatio = microseconds / h2load.cpuMicrosecondsPerRequest
        print(
            String(
                format:
                    "  CPU per notification: sender %.1f µs, h2load %.1f µs per request: %.2f× h2load's (target ≤ 1.1, issue 46: %@)",
                microseconds, h2load.cpuMicrosecondsPerRequest, cpuRatio, cpuRatio <= 1.1 ? "met" : "NOT met"))
        let result: [String: Any] = [
            "benchmark": "sender-throughput", "senders": senderProcesses.count, "notifications": total,
            "batches": batches,
            "seconds": (working * 10).rounded() / 10, "notificationsPerSecond": Int(workingRate),
            "ratio": (workingRate / h2loadRate * 100).rounded() / 100,
            "secondsFromProcessStart": (seconds * 10).rounded() / 10,
            "notificationsPerSecondFromProcessStart": Int(rate),
            "steadyNotificationsPerSecond": Int(steadyRate), "h2loadRequestsPerSecond": Int(h2loadRate),
            "h2loadRuns": h2loadRuns.map { Int($0.rate) },
            "senderCPUMicrosecondsPerNotification": (microseconds * 10).rounded() / 10,
            "h2loadCPUMicrosecondsPerRequest": (h2load.cpuMicrosecondsPerRequest * 10).rounded() / 10,
            "cpuRatioToH2load": (cpuRatio * 100).rounded() / 100,
            "senderPeakRSSMegabytes": peakRSS / 1024,
            "faults": faults ?? "", "h2loadConnections": h2loadConnections, "h2loadStreams": h2loadStreams,
        ]
        print(
            String(decoding: try JSONSerialization.data(withJSONObject: result, options: [.sortedKeys]), as: UTF8.self))
    }

    static func residentKilobytes(_ pid: Int32, field: String) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field) })
        else { return 0 }
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// When `line` first appears in one of the log files (looked for every 2 ms), or nil if cancelled.
    static func waitForLine(_ line: String, inFiles paths: [String]) async -> ContinuousClock.Instant? {
        while !Task.isCancelled {
            for path in paths {
                if let text = try? String(contentsOfFile: path, encoding: .utf8), text.contains(line) { return .now }
            }
            try? await Task.sleep(for: .milliseconds(2))
        }
        return nil
    }
}
