import APNsSimulator
import Foundation
import HeraldRecords
import Testing

/// herald-sender as operators run it: separate processes in one consumer group.
@Suite("herald-sender processes", .serialized)
struct SenderProcessTests {
    /// The folder with the built executables (`make test` sets HERALD_BIN_DIR).
    static var binaryDirectory: String {
        ProcessInfo.processInfo.environment["HERALD_BIN_DIR"] ?? ".build/debug"
    }

    func startSender(
        _ environment: WorkerEnvironment, certificateFile: String, metricsPort: Int, log: String,
        masterKey: String? = nil
    ) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binaryDirectory + "/herald-sender")
        var variables = ProcessInfo.processInfo.environment
        variables["HERALD_MASTER_KEY"] = masterKey ?? environment.masterKey
        variables["HERALD_SENDER_GROUP_ID"] = environment.group
        variables["HERALD_SENDER_JOBS_TOPIC"] = environment.jobsTopic
        variables["HERALD_SENDER_TRANSACTIONAL_JOBS_TOPIC"] = environment.transactionalJobsTopic
        variables["HERALD_SENDER_OUTCOMES_TOPIC"] = environment.outcomesTopic
        variables["HERALD_SENDER_APNS_SANDBOX_HOST"] = "localhost"
        variables["HERALD_SENDER_APNS_SANDBOX_PORT"] = "\(environment.simulator.port)"
        variables["HERALD_SENDER_APNS_SANDBOX_TRUST_CERTIFICATE_FILE"] = certificateFile
        variables["HERALD_SENDER_MAX_BATCHES_IN_FLIGHT"] = "1"
        variables["HERALD_SENDER_METRICS_PORT"] = "\(metricsPort)"
        variables["HERALD_LOG_LEVEL"] = "info"
        process.environment = variables
        FileManager.default.createFile(atPath: log, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        return process
    }

    /// `herald_sender_batches_total` from a sender's /metrics (0 if it does not answer).
    func batchesFinished(metricsPort: Int) -> Int {
        let curl = Process()
        curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        curl.arguments = ["-s", "--max-time", "2", "http://127.0.0.1:\(metricsPort)/metrics"]
        let pipe = Pipe()
        curl.standardOutput = pipe
        guard (try? curl.run()) != nil else { return 0 }
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        curl.waitUntilExit()
        let line = text.split(separator: "\n").first { $0.hasPrefix("herald_sender_batches_total ") }
        return line.flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
    }

    func waitForExit(_ process: Process, timeout: Duration) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(50)) }
        return process.isRunning ? nil : process.terminationStatus
    }

    @Test("started with a master key that did not seal the stored credentials, herald-sender refuses with one line")
    func wrongMasterKeyIsRefused() async throws {
        try await withWorkerEnvironment(deliverable: 1) { environment in
            let log = FileManager.default.temporaryDirectory.appendingPathComponent(
                "herald-sender-wrong-key-\(environment.suffix).log"
            ).path
            let wrongKey = Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
            let certificateFile = log + ".pem"
            try environment.simulator.identity.certificatePEM.write(
                toFile: certificateFile, atomically: true, encoding: .utf8)
            let process = try startSender(
                environment, certificateFile: certificateFile, metricsPort: Int.random(in: 28000..<29000), log: log,
                masterKey: wrongKey)
            let status = await waitForExit(process, timeout: .seconds(60))
            if status == nil { kill(process.processIdentifier, SIGKILL) }
            let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            #expect(status != nil && status != 0, "herald-sender must exit; log: \(output)")
            let expected =
                "sealed with master key id \(environment.cipher.sealingKeyID), which neither HERALD_MASTER_KEY"
            #expect(output.contains(expected), "\(output)")
            #expect(!output.contains(wrongKey), "the key itself is never written")
        }
    }

    @Test(
        "two workers share the partitions; one SIGKILLed mid-batch, the other completes every batch; duplicates carry the same apns-id and collapse id; SIGTERM stops cleanly"
    )
    func killOneOfTwo() async throws {
        var faults = APNsFaults()
        faults.latency = .init(distribution: .fixed, milliseconds: 300)
        try await withWorkerEnvironment(deliverable: 6000, faults: faults) { environment in
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
                "herald-sender-\(environment.suffix)"
            ).path
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let certificateFile = folder + "/apns-sim.pem"
            try environment.simulator.identity.certificatePEM.write(
                toFile: certificateFile, atomically: true, encoding: .utf8)
            let batchIDs = try await environment.produceJobs(batches: 60, targets: 100)

            // Metrics ports below the kernel's ephemeral range (32768 up), where an outgoing
            // connection's source port could take one first (it once did, in CI: "Address already
            // in use"), and away from the ranges other tests pick from.
            let portA = Int.random(in: 26000..<27000)
            let portB = portA + 1000
            let workerA = try startSender(
                environment, certificateFile: certificateFile, metricsPort: portA, log: folder + "/a.log")
            let workerB = try startSender(
                environment, certificateFile: certificateFile, metricsPort: portB, log: folder + "/b.log")
            defer {
                kill(workerA.processIdentifier, SIGKILL)
                kill(workerB.processIdentifier, SIGKILL)
            }

            // Both members get partitions and finish batches.
            var shared = false
            let deadline = ContinuousClock.now + .seconds(90)
            while !shared, ContinuousClock.now < deadline {
                shared = batchesFinished(metricsPort: portA) > 0 && batchesFinished(metricsPort: portB) > 0
                if !shared { try await Task.sleep(for: .milliseconds(200)) }
            }
            #expect(shared, "both workers should have finished batches; logs in \(folder)")

            // A dies in the middle of a batch (one is always in flight while work remains).
            kill(workerA.processIdentifier, SIGKILL)
            let outcomes = try await environment.collectOutcomes(batchIDs, timeout: .seconds(150))
            #expect(Set(outcomes.keys) == batchIDs, "every batch gets its outcome; logs in \(folder)")
            let accepted = Set(outcomes.values.flatMap(\.acceptedDeviceIds))
            #expect(accepted == Set((1...6000).map(UInt64.init)))

            // A phone may get a redelivered notification again, but it is the same one: same
            // apns-id, same collapse id (it replaces the first).
            let recorded = environment.simulator.ledger.notifications()
            let byToken = Dictionary(grouping: recorded, by: \.token)
            #expect(byToken.count == 6000)
            #expect(
                byToken.values.allSatisfy { copies in
                    Set(copies.map(\.apnsID)).count == 1 && Set(copies.map(\.collapseID)).count == 1
                })

            // B stops cleanly on SIGTERM.
            kill(workerB.processIdentifier, SIGTERM)
            #expect(await waitForExit(workerB, timeout: .seconds(60)) == 0)
        }
    }
}
