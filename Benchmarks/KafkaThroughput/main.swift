// kafka-throughput: Herald's Kafka client against kcat (librdkafka's own command-line client)
// on the same development broker, in one run.
//
// Starts its own herald-kafka-dev (on free ports), produces N job-batch records of realistic
// size with Herald's producer and the same number of records of the same size with kcat,
// consumes Herald's topic back with Herald's group consumer (storing every offset) and with
// kcat, and prints the rates, then one JSON line with every figure.
import Foundation
import HeraldCore
import HeraldKafka
import HeraldMessaging
import HeraldRecords
import Logging
import Synchronization

struct Options {
    var records = 1_000_000
    var targetsPerRecord = 1
    var partitions = 128
    var brokerBinary = ".build/release/herald-kafka-dev"
    var kcat = "kcat"
    var compression = "none"
    var inFlightChunks = 8
    var chunkSize = 10_000

    init(arguments: [String]) {
        var iterator = arguments.dropFirst().makeIterator()
        while let argument = iterator.next() {
            let value = iterator.next() ?? ""
            switch argument {
            case "--records": records = Int(value) ?? records
            case "--targets": targetsPerRecord = Int(value) ?? targetsPerRecord
            case "--partitions": partitions = Int(value) ?? partitions
            case "--broker-binary": brokerBinary = value
            case "--kcat": kcat = value
            case "--compression": compression = value
            default:
                FileHandle.standardError.write(
                    Data(
                        """
                        usage: kafka-throughput [--records N] [--targets T] [--partitions P] [--broker-binary PATH] [--kcat PATH] [--compression lz4|none|zstd]

                        """.utf8))
                exit(2)
            }
        }
    }
}

func seconds(since start: ContinuousClock.Instant) -> Double {
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}

/// Waits for a child process without blocking a thread.
func waitForExit(_ process: Process) async -> Int32 {
    while process.isRunning { try? await Task.sleep(for: .milliseconds(20)) }
    return process.terminationStatus
}

/// A fast generator for filler bytes (the system one makes a syscall per call).
struct FillerGenerator: RandomNumberGenerator {
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    mutating func next() -> UInt64 {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return state
    }
}
nonisolated(unsafe) var filler = FillerGenerator()

/// Reads `count` records, storing each offset, as a service's loop would: off the main actor
/// (top-level code runs on it, and hopping back to it after every batch costs far more than the
/// batch).
/// Gives up when no record arrives for 10 s (the development broker drops records beyond
/// about 5 MiB per partition), and reports what it got.
@concurrent
func consumeAll(_ consumer: KafkaConsumer, count: Int) async throws -> (Int, ContinuousClock.Instant) {
    final class Progress: Sendable {
        let state = Mutex<(count: Int, last: ContinuousClock.Instant)>((0, .now))
    }
    let progress = Progress()
    return try await withThrowingTaskGroup(of: (Int, ContinuousClock.Instant)?.self) { group in
        group.addTask {
            var consumed = 0
            var start: ContinuousClock.Instant?
            for try await message in consumer.messages {
                if start == nil { start = ContinuousClock.now }
                try consumer.storeOffset(for: message)
                consumed += 1
                if consumed % 1024 == 0 { progress.state.withLock { $0 = (consumed, .now) } }
                if consumed == count { break }
            }
            return (consumed, start ?? ContinuousClock.now)
        }
        group.addTask {
            while true {
                do { try await Task.sleep(for: .seconds(1)) } catch { return nil }
                let (seen, last) = progress.state.withLock { $0 }
                if ContinuousClock.now - last > .seconds(10) {
                    print("  herald consume: stalled at \(seen) records; giving up (records lost by the broker?)")
                    try await consumer.close()
                    return nil
                }
            }
        }
        var result: (Int, ContinuousClock.Instant)?
        for try await value in group {
            if let value {
                result = value
                group.cancelAll()
            }
        }
        return result!
    }
}

/// A job batch like the ones herald-center produces: one push's payload and its targets.
func jobRecord(sequence: Int, targets: Int, pushID: Data) throws -> [UInt8] {
    try Herald_V1_JobBatch(
        pushID: pushID, appID: pushID, sequence: UInt32(sequence), environment: .production,
        apnsTopic: "com.example.shop", pushType: .alert, priority: 10, expirationS: 1_900_000_000,
        collapseID: "4f7c1c2e-5b1d-4c7a-9a53-2f6d1e9b8c01",
        payload: Data(
            #"{"aps":{"alert":{"title":"Your order shipped","body":"It arrives tomorrow."},"sound":"default"}}"#.utf8),
        targets: (0..<targets).map { index in
            .init(
                deviceID: UInt64(sequence * targets + index + 1),
                token: Data((0..<32).map { _ in UInt8.random(in: 0...255, using: &filler) }))
        },
        createdAtMs: 1_763_700_000_000
    ).encodedRecord()
}

let options = Options(arguments: CommandLine.arguments)
LoggingSystem.bootstrap { label in
    var handler = StreamLogHandler.standardError(label: label)
    handler.logLevel = .warning
    return handler
}
let logger = Logger(label: "kafka-throughput")
let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("herald-kafka-bench-\(getpid())")
try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: scratch) }

// 1. A development broker of our own, with both topics created up front.
let addressFile = scratch.appendingPathComponent("address")
let broker = Process()
broker.executableURL = URL(fileURLWithPath: options.brokerBinary)
var environment = ProcessInfo.processInfo.environment
environment["HERALD_KAFKA_DEV_PORT"] = "0"
environment["HERALD_KAFKA_DEV_BOOTSTRAP_FILE"] = addressFile.path
environment["HERALD_KAFKA_DEV_TOPICS"] =
    "bench.herald:\(options.partitions),bench.kcat:\(options.partitions),bench.warmup:1"
broker.environment = environment
broker.standardOutput = FileHandle.nullDevice
broker.standardError = FileHandle(forWritingAtPath: "/dev/null")
try broker.run()
defer { broker.terminate() }
var bootstrap = ""
for _ in 0..<200 {
    if let text = try? String(contentsOf: addressFile, encoding: .utf8), !text.isEmpty {
        bootstrap = text.trimmingCharacters(in: .whitespacesAndNewlines)
        break
    }
    try await Task.sleep(for: .milliseconds(50))
}
guard !bootstrap.isEmpty else {
    print(
        "the development broker did not start (\(options.brokerBinary)); build it with: swift build -c release --product herald-kafka-dev"
    )
    exit(1)
}
let settings = KafkaSettings(brokers: bootstrap, compression: options.compression)

// 2. The records.
let pushID = Data((0..<16).map { _ in UInt8.random(in: 0...255) })
let records = try (0..<options.records).map {
    try jobRecord(sequence: $0, targets: options.targetsPerRecord, pushID: pushID)
}
// Keyed by batch id, as herald-center keys job batches: spreads them evenly over partitions.
let keys = (0..<options.records).map { Array(Herald_V1_JobBatch.batchID(pushID: pushID, sequence: UInt32($0))) }
let recordBytes = records.reduce(0) { $0 + $1.count } / max(1, records.count)
print(
    "Kafka throughput: \(options.records) job-batch records, \(options.targetsPerRecord) target(s) each, \(recordBytes) bytes on average, \(options.partitions) partitions, broker \(bootstrap)"
)

// 3. Herald's producer: chunks of records in flight at once, each acknowledged by the broker.
let producer = try KafkaProducer(configuration: settings.producerConfiguration(clientID: "bench"), logger: logger)
// Warm up outside the measurement: metadata, connections and the idempotent producer id.
try await producer.send(KafkaProducerMessage(topic: "bench.warmup", value: [0]))
let produceStart = ContinuousClock.now
try await withThrowingTaskGroup(of: Void.self) { group in
    var next = 0
    var inFlight = 0
    while next < records.count || inFlight > 0 {
        while inFlight < options.inFlightChunks && next < records.count {
            let range = next..<min(records.count, next + options.chunkSize)
            next = range.upperBound
            inFlight += 1
            group.addTask {
                try await producer.send(
                    range.map { index in
                        KafkaProducerMessage(topic: "bench.herald", key: keys[index], value: records[index])
                    })
            }
        }
        try await group.next()
        inFlight -= 1
    }
}
let heraldProduceSeconds = seconds(since: produceStart)
await producer.shutdown()
print(
    String(
        format: "  herald produce: %.2f s, %.0f records/s", heraldProduceSeconds,
        Double(options.records) / heraldProduceSeconds))

// 4. Herald's consumer: a group member storing every offset.
let consumer = try KafkaConsumer(
    configuration: settings.consumerConfiguration(
        groupID: "bench-\(UUID())", topics: ["bench.herald"], clientID: "bench"),
    logger: logger)
let joinStart = ContinuousClock.now
let (consumed, consumeStart) = try await consumeAll(consumer, count: options.records)
let heraldConsumeSeconds = seconds(since: consumeStart)
let heraldJoinSeconds = seconds(since: joinStart) - heraldConsumeSeconds
try await consumer.close()
print(
    String(
        format: "  herald consume: %.2f s, %.0f records/s (first to last record; joining the group excluded)",
        heraldConsumeSeconds, Double(consumed) / heraldConsumeSeconds))

// 5. The reference: kcat producing records of the same size from a file, then consuming them.
let kcatInput = scratch.appendingPathComponent("records.txt")
do {
    // Printable records of the same size (kcat splits its input at newlines).
    let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".utf8)
    var text = [UInt8]()
    text.reserveCapacity(options.records * (recordBytes + 1))
    for record in records {
        for _ in 0..<record.count { text.append(alphabet[Int.random(in: 0..<alphabet.count, using: &filler)]) }
        text.append(UInt8(ascii: "\n"))
    }
    try Data(text).write(to: kcatInput)
}
func runKcat(_ arguments: [String]) async throws -> (seconds: Double, status: Int32) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [options.kcat] + arguments
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    let start = ContinuousClock.now
    try process.run()
    let status = await waitForExit(process)
    return (seconds(since: start), status)
}
let kcatProduce = try await runKcat([
    "-P", "-b", bootstrap, "-t", "bench.kcat", "-l", kcatInput.path,
    "-X", "linger.ms=5", "-X", "compression.codec=\(options.compression)", "-X", "enable.idempotence=true", "-X",
    "acks=all",
    "-X", "queue.buffering.max.messages=100000",
])
print(
    String(
        format: "  kcat produce:   %.2f s, %.0f records/s%@", kcatProduce.seconds,
        Double(options.records) / kcatProduce.seconds,
        kcatProduce.status == 0 ? "" : " (kcat exited with \(kcatProduce.status))"))
// kcat reads the topic Herald's consumer read, from the beginning, without a group (a
// group's join takes seconds on the development broker and would swamp the figure); its time
// runs from process start to exit.
let kcatConsume = try await runKcat([
    "-C", "-b", bootstrap, "-t", "bench.herald", "-o", "beginning", "-e", "-q",
    "-c", "\(options.records)", "-X", "fetch.wait.max.ms=10",
])
let kcatConsumeSeconds = kcatConsume.seconds
print(
    String(
        format: "  kcat consume:   %.2f s, %.0f records/s (same topic, no group, process start to exit)",
        kcatConsumeSeconds, Double(options.records) / kcatConsumeSeconds))

let summary: [String: Any] = [
    "benchmark": "kafka-throughput",
    "records": options.records,
    "record_bytes": recordBytes,
    "targets_per_record": options.targetsPerRecord,
    "partitions": options.partitions,
    "compression": options.compression,
    "herald_produce_records_per_second": (Double(options.records) / heraldProduceSeconds).rounded(),
    "herald_consume_records_per_second": (Double(consumed) / heraldConsumeSeconds).rounded(),
    "herald_consumed": consumed,
    "kcat_produce_records_per_second": (Double(options.records) / kcatProduce.seconds).rounded(),
    "kcat_consume_records_per_second": (Double(options.records) / kcatConsumeSeconds).rounded(),
    "group_join_seconds": (heraldJoinSeconds * 100).rounded() / 100,
    "produce_ratio_herald_to_kcat": ((kcatProduce.seconds / heraldProduceSeconds) * 100).rounded() / 100,
    "consume_ratio_herald_to_kcat": ((kcatConsumeSeconds / heraldConsumeSeconds) * 100).rounded() / 100,
]
let json = try JSONSerialization.data(withJSONObject: summary, options: [.sortedKeys])
print(String(decoding: json, as: UTF8.self))
