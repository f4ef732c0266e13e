import ArgumentParser
import Foundation
import HeraldCLI
import HeraldCore
import HeraldKafka
import HeraldMessaging
import HeraldTiming
import Logging
import ServiceLifecycle
import Synchronization

/// `herald kafka`: diagnostics that push records through the configured brokers.
struct KafkaCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "kafka",
        abstract: "Kafka: create Herald's topics; produce and consume test records through HERALD_KAFKA_BROKERS.",
        subcommands: [
            KafkaCreateTopicsCommand.self, KafkaDeadLettersCommand.self, KafkaProduceCommand.self,
            KafkaConsumeCommand.self,
        ]
    )
}

/// Produces numbered test records and reports the rate.
struct KafkaProduceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "produce",
        abstract:
            "Produce COUNT numbered records (\"RUN:N\", padded to SIZE bytes) and wait until all are acknowledged."
    )

    @Option(help: "The topic to write to.") var topic: String
    @Option(help: "How many records.") var count: Int = 1000
    @Option(help: "Bytes per record value (at least the length of \"RUN:N\").") var size: Int = 100
    @Option(help: "Prefix of every value, so runs can be told apart.") var runID: String = "run"
    @Option(help: "Records per send call (acknowledged together).") var batch: Int = 1000

    func run() async throws {
        let (configuration, logger) = try await CommandSupport.bootstrap(label: "herald.kafka.produce")
        let producer = try KafkaProducer(
            configuration: configuration.kafka.producerConfiguration(clientID: "cli-produce"),
            logger: logger)
        let started = ContinuousClock.now
        var next = 0
        while next < count {
            let end = min(count, next + batch)
            let messages = (next..<end).map { index in
                // Keyed by index: records spread evenly over the partitions.
                KafkaProducerMessage(
                    topic: topic, key: Array(String(index).utf8),
                    value: Self.value(runID: runID, index: index, size: size))
            }
            try await producer.send(messages)
            next = end
        }
        let elapsed = ContinuousClock.now - started
        await producer.shutdown()
        let seconds = elapsed.fractionalSeconds
        CommandSupport.printJSON([
            "produced": count, "topic": topic, "seconds": seconds,
            "records_per_second": seconds > 0 ? Double(count) / seconds : 0,
        ])
    }

    /// `RUN:N` padded with dots to `size` bytes.
    static func value(runID: String, index: Int, size: Int) -> [UInt8] {
        var bytes = Array("\(runID):\(index)".utf8)
        if bytes.count < size { bytes.append(contentsOf: repeatElement(UInt8(ascii: "."), count: size - bytes.count)) }
        return bytes
    }
}

/// A consumer-group member that logs what it handles; used by tests and to watch a topic.
struct KafkaConsumeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "consume",
        abstract:
            "Join GROUP on TOPIC; for every record, append its value (up to the first '.') to LOG, then store its offset.",
        discussion: """
            Runs until SIGTERM or SIGINT, then commits and leaves the group. With --hold-after K it \
            stops storing offsets after K records: it handles --hold-count more (logged as "U <value>"), \
            commits what it stored, writes --hold-marker and waits, so a test can kill it with records \
            handled but not stored.
            """
    )

    @Option(help: "The topic to read.") var topic: String
    @Option(help: "The consumer group.") var group: String
    @Option(help: "File the handled values are appended to, one per line.") var log: String
    @Option(help: "Stop storing offsets after this many records.") var holdAfter: Int?
    @Option(help: "Records handled without storing before holding.") var holdCount: Int = 100
    @Option(help: "File written when holding.") var holdMarker: String?
    @Option(help: "File written (with the partitions) once this member owns partitions.") var readyFile: String?

    func run() async throws {
        let (configuration, logger) = try await CommandSupport.bootstrap(label: "herald.kafka.consume")
        let consumer = try KafkaConsumer(
            configuration: configuration.kafka.consumerConfiguration(
                groupID: group, topics: [topic], clientID: "cli-consume"),
            logger: logger
        )
        guard let output = fopen(log, "a") else {
            throw ValidationError("cannot open \(log) for appending")
        }
        let handler = ConsumeLoop(
            consumer: consumer, output: FileBox(output), holdAfter: holdAfter,
            holdCount: holdCount, holdMarker: holdMarker)
        let serviceGroup = ServiceGroup(
            configuration: .init(
                // Graceful shutdown goes in reverse order: the loop stops first, then the
                // consumer commits what it stored and leaves the group.
                services: [
                    .init(service: consumer),
                    .init(service: handler, successTerminationBehavior: .gracefullyShutdownGroup),
                    .init(service: AssignmentWatcher(consumer: consumer, readyFile: readyFile)),
                ],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
        )
        try await serviceGroup.run()
        fclose(output)
        CommandSupport.printJSON(["handled": handler.handledCount.withLock { $0 }, "group": group, "topic": topic])
    }
}

/// Writes the ready file once the consumer owns partitions.
struct AssignmentWatcher: Service {
    let consumer: KafkaConsumer
    let readyFile: String?

    func run() async throws {
        while let readyFile, !Task.isCancelled && !Task.isShuttingDownGracefully {
            let assignment = consumer.assignment
            if !assignment.isEmpty {
                let text = assignment.map(\.description).joined(separator: "\n") + "\n"
                FileManager.default.createFile(atPath: readyFile, contents: Data(text.utf8))
                break
            }
            try? await Task.sleep(for: .milliseconds(100))
        }
        try? await gracefulShutdown()
    }
}

/// An open C file, shared by the loop's one task.
final class FileBox: @unchecked Sendable {
    let file: UnsafeMutablePointer<FILE>
    init(_ file: UnsafeMutablePointer<FILE>) { self.file = file }
}

/// Handles records: log, then store the offset.
final class ConsumeLoop: Service, Sendable {
    let consumer: KafkaConsumer
    let output: FileBox
    let holdAfter: Int?
    let holdCount: Int
    let holdMarker: String?
    let handledCount = Mutex(0)

    init(consumer: KafkaConsumer, output: FileBox, holdAfter: Int?, holdCount: Int, holdMarker: String?) {
        self.consumer = consumer
        self.output = output
        self.holdAfter = holdAfter
        self.holdCount = holdCount
        self.holdMarker = holdMarker
    }

    func run() async throws {
        var handled = 0
        var unstored = 0
        for try await message in consumer.messages {
            let label = message.value.prefix { $0 != UInt8(ascii: ".") }
            let holding = holdAfter.map { handled >= $0 } ?? false
            var line = holding ? Array("U ".utf8) : []
            line.append(contentsOf: label)
            line.append(UInt8(ascii: "\n"))
            // Handling = the line reaches the kernel; only then is the offset stored.
            _ = line.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, output.file) }
            fflush(output.file)
            handled += 1
            handledCount.withLock { $0 = handled }
            if holding {
                unstored += 1
                if unstored >= holdCount {
                    try await consumer.commit()
                    if let holdMarker {
                        FileManager.default.createFile(atPath: holdMarker, contents: Data("\(handled)\n".utf8))
                    }
                    // Wait to be killed (or stopped).
                    try? await gracefulShutdown()
                    return
                }
                continue
            }
            do {
                try consumer.storeOffset(for: message)
            } catch {
                // The partition moved to another member, which will deliver the record again.
            }
        }
    }
}
