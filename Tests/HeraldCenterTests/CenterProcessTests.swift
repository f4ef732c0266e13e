import Foundation
import HeraldStore
import Testing

/// herald-center as operators run it: a separate process, SIGKILLed in the middle of a fan-out
/// and replaced by another.
@Suite("herald-center processes", .serialized)
struct CenterProcessTests {
    static var binaryDirectory: String {
        ProcessInfo.processInfo.environment["HERALD_BIN_DIR"] ?? ".build/debug"
    }

    func startCenter(_ env: CenterEnvironment, name: String, log: String) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binaryDirectory + "/herald-center")
        var variables = ProcessInfo.processInfo.environment
        variables["HERALD_POSTGRES_DATABASE"] = env.configuration.postgres.database
        variables["HERALD_CENTER_NAME"] = name
        variables["HERALD_CENTER_GROUP_ID"] = "herald-center-test-\(env.suffix)"
        variables["HERALD_CENTER_PUSHES_TOPIC"] = env.pushesTopic
        variables["HERALD_CENTER_JOBS_TOPIC"] = env.jobsTopic
        variables["HERALD_CENTER_TRANSACTIONAL_JOBS_TOPIC"] = env.transactionalJobsTopic
        variables["HERALD_CENTER_OUTCOMES_TOPIC"] = env.outcomesTopic
        variables["HERALD_CENTER_PAGE_SIZE"] = "1000"
        variables["HERALD_CENTER_BATCH_SIZE"] = "100"
        variables["HERALD_CENTER_CLAIM_LEASE_MS"] = "1500"
        variables["HERALD_CENTER_SWEEP_INTERVAL_MS"] = "100"
        variables["HERALD_CENTER_METRICS_PORT"] = "0"
        // Its retention sleeps an hour after its first sweep: SIGTERM must not wait for that.
        variables["HERALD_CENTER_RETENTION_INTERVAL_MS"] = "3600000"
        // It shares the test database with the webhook tests, whose receivers their own
        // dispatchers serve: this center delivers none (it would claim theirs, and refuse them).
        variables["HERALD_CENTER_WEBHOOK_MAX_IN_FLIGHT"] = "0"
        variables["HERALD_LOG_LEVEL"] = "info"
        process.environment = variables
        FileManager.default.createFile(atPath: log, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        return process
    }

    @Test("a librdkafka property it refuses stops herald-center at start with librdkafka's words, in one line")
    func refusedKafkaProperty() async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binaryDirectory + "/herald-center")
        process.environment = ProcessInfo.processInfo.environment.merging([
            "HERALD_KAFKA_PROPERTY_SOCKET_KEEPALIVE_ENABLE": "maybe", "HERALD_CENTER_METRICS_PORT": "0",
            "HERALD_KAFKA_SASL_PASSWORD": "kafka-secret-not-to-print",
        ]) { $1 }
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let deadline = ContinuousClock.now + .seconds(60)
        while process.isRunning, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus == 2)
        let lines = text.split(separator: "\n").filter { $0.hasPrefix("herald-center:") }
        #expect(lines.count == 1, "\(text)")
        #expect(
            lines.first?.contains(
                #"librdkafka refused property socket.keepalive.enable=maybe: Expected bool value for "socket.keepalive.enable": true or false"#
            ) == true, "\(text)")
        #expect(!text.contains("kafka-secret-not-to-print"))
    }

    @Test("a center SIGKILLed mid-fan-out is replaced; the push reaches every device once and its counters add up")
    func killedCenterResumes() async throws {
        try await withCenterEnvironment { env in
            let devices = try await env.registerMany(20_000)
            let sender = try env.startFakeSender()
            let logs = FileManager.default.temporaryDirectory.appendingPathComponent("center-kill-\(env.suffix)").path
            try FileManager.default.createDirectory(atPath: logs, withIntermediateDirectories: true)
            let first = try startCenter(env, name: "center-first", log: logs + "/first.log")
            let push = try await env.createPush(audience: .everyone, throttlePerSecond: 5000)
            #expect(
                try await env.eventually {
                    try await env.pushes.push(id: push.id, appID: env.app.id)?.batchesEmitted ?? 0 >= 40
                })
            kill(first.processIdentifier, SIGKILL)
            first.waitUntilExit()
            let stoppedAt = try #require(try await env.pushes.push(id: push.id, appID: env.app.id))
            #expect(stoppedAt.batchesEmitted < 200, "killed in the middle")

            let second = try startCenter(env, name: "center-second", log: logs + "/second.log")
            #expect(try await env.eventually(timeout: .seconds(90)) { try await env.state(of: push) == .completed })
            let counts = sender.deviceCounts(push: push)
            #expect(counts.count == 20_000)
            #expect(Set(counts.keys) == Set(devices))
            #expect(counts.values.allSatisfy { $0 == 1 }, "no device in two batches")
            let counters = try #require(try await env.pushes.counters(pushID: push.id))
            #expect(counters.targeted == 20_000 && counters.accepted == 20_000 && counters.isComplete)
            let log = (try? String(contentsOfFile: logs + "/second.log", encoding: .utf8)) ?? ""
            #expect(log.contains("push claimed"))
            second.terminate()
            // Generous against a slow machine, far short of the hour its retention sleeps: a
            // service that does not wake at graceful shutdown holds SIGTERM until its next round.
            let stopDeadline = ContinuousClock.now + .seconds(60)
            while second.isRunning, ContinuousClock.now < stopDeadline { try await Task.sleep(for: .milliseconds(50)) }
            #expect(!second.isRunning, "SIGTERM stops it without waiting for the retention's next round")
            if second.isRunning { kill(second.processIdentifier, SIGKILL) }
            second.waitUntilExit()
            #expect(second.terminationStatus == 0, "SIGTERM stops it cleanly")
            await sender.stop()
        }
    }
}
