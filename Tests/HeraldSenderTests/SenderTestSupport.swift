import APNsSimulator
import Crypto
import Foundation
import HeraldAPNsVocabulary
import HeraldCore
import HeraldDomain
import HeraldMessaging
import HeraldRecords
import HeraldSender
import HeraldStore
import Logging
import PostgresNIO
import Synchronization
import Testing

@testable import HeraldKafka

/// A 32-byte token per device number, the same each time.
func deviceToken(_ device: Int) -> Data {
    withUnsafeBytes(of: UInt32(device).bigEndian) { Data($0) } + Data((4..<32).map { UInt8($0 * 7) })
}

func hex(_ data: Data) -> String { Hexadecimal.encode(data) }

/// Everything a sender test needs: an app with a stored (sealed) APNs key in PostgreSQL, apns-sim
/// knowing that key and the devices, and topics of its own on the development broker.
struct WorkerEnvironment: Sendable {
    let configuration: HeraldConfiguration
    let database: PostgresClient
    let logger: Logger
    let masterKey: String
    let cipher: CredentialCipher
    let appID: UUID
    let bundleID: String
    let simulator: APNsSimulator
    let suffix: String
    var jobsTopic: String { "herald.test.jobs.\(suffix)" }
    var transactionalJobsTopic: String { "herald.test.jobs.transactional.\(suffix)" }
    var outcomesTopic: String { "herald.test.outcomes.\(suffix)" }
    var group: String { "herald-sender-test-\(suffix)" }

    /// Stores a push of the app as herald-api would.
    func store(pushID: UUID) async throws {
        _ = try await PushRepository(client: database, logger: logger).create(
            NewPush(
                id: pushID, appID: appID, audienceJSON: "{}", notificationJSON: "{}",
                payload: Array(#"{"aps":{"alert":"worker"}}"#.utf8)),
            announcement: .init(topic: "herald.test.sender.pushes", key: nil, value: []))
    }

    /// Produces `batches` job batches of `targets` targets each (device numbers from 1) for one
    /// push, stored first as herald-api would (`storePush: false` for a push the test stored
    /// itself, or one that must not exist); returns the batch ids.
    func produceJobs(
        batches: Int, targets: Int, pushID: UUID = UUID(), storePush: Bool = true, trace: TraceContext? = nil,
        topic: String? = nil
    ) async throws -> Set<Data> {
        if storePush { try await store(pushID: pushID) }
        let pushIDBytes = pushID.recordBytes
        let appIDBytes = appID.recordBytes
        let records = (0..<batches).map { sequence in
            Herald_V1_JobBatch(
                pushID: pushIDBytes, appID: appIDBytes, sequence: UInt32(sequence), environment: .sandbox,
                apnsTopic: bundleID,
                pushType: .alert, priority: 10, expirationS: 0, collapseID: "",
                payload: Data(#"{"aps":{"alert":"worker"}}"#.utf8),
                targets: (1...targets).map {
                    Herald_V1_JobBatch.Target(
                        deviceID: UInt64(sequence * targets + $0), token: deviceToken(sequence * targets + $0))
                },
                createdAtMs: 0)
        }
        let producer = try KafkaProducer(
            configuration: configuration.kafka.producerConfiguration(clientID: "test-jobs"), logger: logger)
        try await producer.send(
            try records.map {
                KafkaProducerMessage(
                    topic: topic ?? jobsTopic, key: Array($0.batchID), value: try $0.encodedRecord(),
                    headers: trace.map { [KafkaHeader(traceparent: $0.traceparent)] } ?? [])
            })
        await producer.shutdown()
        return Set(records.map(\.batchID))
    }

    /// Produces records exactly as given (crafted ones included) to the jobs topic.
    func produceRawJobs(_ values: [[UInt8]]) async throws {
        let producer = try KafkaProducer(
            configuration: configuration.kafka.producerConfiguration(clientID: "test-jobs"), logger: logger)
        try await producer.send(values.map { KafkaProducerMessage(topic: jobsTopic, key: nil, value: $0) })
        await producer.shutdown()
    }

    /// The dead letters of records from `topic`, read from `herald.deadletter` until `count`
    /// arrived or 30 s passed.
    func deadLetters(from topic: String, count: Int) async throws -> [Herald_V1_DeadLetter] {
        let consumer = try KafkaConsumer(
            configuration: configuration.kafka.consumerConfiguration(
                groupID: "\(group)-dead-letters-\(UUID().uuidString.prefix(4))", topics: [HeraldTopic.deadLetter.name],
                clientID: "test-dead-letters"),
            logger: logger)
        // A record read again after a rebalance is dead-lettered again (at least once): count each
        // original record once.
        var letters: [String: Herald_V1_DeadLetter] = [:]
        let deadline = ContinuousClock.now + .seconds(30)
        while letters.count < count, ContinuousClock.now < deadline, let messages = try await consumer.nextMessages() {
            for letter in messages.compactMap({ try? Herald_V1_DeadLetter.decodeRecord($0.value) })
            where letter.originalTopic == topic {
                letters["\(letter.originalPartition)/\(letter.originalOffset)"] = letter
            }
        }
        try await consumer.close()
        return Array(letters.values)
    }

    /// Reads outcome batches until every one of `batchIDs` has one (or `timeout` passes); a batch
    /// published twice (after a redelivery) counts once, its last copy kept.
    func collectOutcomes(_ batchIDs: Set<Data>, timeout: Duration = .seconds(120)) async throws -> [Data:
        Herald_V1_OutcomeBatch]
    {
        try await collectOutcomeRecords(batchIDs, timeout: timeout).mapValues(\.outcome)
    }

    /// ``collectOutcomes(_:timeout:)``, each outcome with the trace context of its record's header.
    func collectOutcomeRecords(_ batchIDs: Set<Data>, timeout: Duration = .seconds(120)) async throws -> [Data: (
        outcome: Herald_V1_OutcomeBatch, trace: TraceContext?
    )] {
        try await readOutcomes(batchIDs, timeout: timeout).byBatch
    }

    /// The batch ids of `batchIDs` in the order their first outcome reached the outcomes topic.
    func outcomeOrder(_ batchIDs: Set<Data>, timeout: Duration = .seconds(120)) async throws -> [Data] {
        try await readOutcomes(batchIDs, timeout: timeout).order
    }

    private func readOutcomes(_ batchIDs: Set<Data>, timeout: Duration) async throws -> (
        byBatch: [Data: (outcome: Herald_V1_OutcomeBatch, trace: TraceContext?)], order: [Data]
    ) {
        let consumer = try KafkaConsumer(
            configuration: configuration.kafka.consumerConfiguration(
                groupID: "\(group)-reader-\(UUID().uuidString.prefix(4))", topics: [outcomesTopic],
                clientID: "test-outcomes"),
            logger: logger)
        var byBatch: [Data: (outcome: Herald_V1_OutcomeBatch, trace: TraceContext?)] = [:]
        var order: [Data] = []
        let deadline = ContinuousClock.now + timeout
        while !batchIDs.isSubset(of: Set(byBatch.keys)), ContinuousClock.now < deadline {
            guard let (messages, _) = try await consumer.nextBatch() else { break }
            for message in messages {
                let outcome = try Herald_V1_OutcomeBatch.decodeRecord(message.value)
                if byBatch[outcome.batchID] == nil { order.append(outcome.batchID) }
                byBatch[outcome.batchID] = (outcome, message.trace)
            }
        }
        try await consumer.close()
        return (byBatch, order)
    }
}

/// Sets up a ``WorkerEnvironment`` with `deliverable` known devices (1…deliverable) and
/// `unregistered` more after them, runs `body`, and stops apns-sim.
func withWorkerEnvironment(
    deliverable: Int, unregistered: Int = 0, faults: APNsFaults = APNsFaults(),
    _ body: @Sendable (WorkerEnvironment) async throws -> Void
) async throws {
    let configuration = try await HeraldConfiguration.load()
    let logger = Logger(label: "test.sender")
    // The local cluster's key (scripts/with-infrastructure.sh): herald-sender processes started
    // against the database check that it sealed the stored credentials.
    let masterKey = try #require(
        ProcessInfo.processInfo.environment["HERALD_MASTER_KEY"], "run through scripts/with-infrastructure.sh")
    let cipher = try CredentialCipher(masterKeyBase64: masterKey)
    let signingKey = P256.Signing.PrivateKey()
    let suffix = String(UUID().uuidString.prefix(8)).lowercased()
    let bundleID = "com.herald.worker.\(suffix)"

    var simulatorConfiguration = APNsSimulatorConfiguration()
    simulatorConfiguration.port = 0
    simulatorConfiguration.adminPort = nil
    simulatorConfiguration.threads = 1
    simulatorConfiguration.faults = faults
    simulatorConfiguration.keys = [
        ProviderKey(
            keyID: "WORKERKEY1", teamID: "WORKERTEAM", publicKeyPEM: signingKey.publicKey.pemRepresentation,
            topics: [bundleID])
    ]
    simulatorConfiguration.devices =
        (1...deliverable).map { SimulatedDevice(token: hex(deviceToken($0)), topic: bundleID) }
        + (0..<unregistered).map {
            SimulatedDevice(
                token: hex(deviceToken(deliverable + 1 + $0)), topic: bundleID,
                unregisteredAt: 1_700_000_000_000 + Int64(deliverable + 1 + $0))
        }
    let simulator = try await APNsSimulator.start(simulatorConfiguration)
    do {
        try await HeraldDatabase.withClient(settings: configuration.postgres, logger: logger) { database in
            try await MigrationRunner(client: database, logger: logger).migrate()
            let app = try await AppRepository(client: database, logger: logger).create(
                name: "worker test", bundleID: bundleID)
            try await CredentialRepository(client: database, logger: logger).upsert(
                .token(
                    appID: app.id, environment: .sandbox, keyID: "WORKERKEY1", teamID: "WORKERTEAM",
                    privateKeyPEM: signingKey.pemRepresentation, cipher: cipher))
            try await body(
                WorkerEnvironment(
                    configuration: configuration, database: database, logger: logger, masterKey: masterKey,
                    cipher: cipher,
                    appID: app.id, bundleID: bundleID, simulator: simulator, suffix: suffix))
        }
    } catch {
        await simulator.shutdown()
        throw error
    }
    await simulator.shutdown()
}

/// Log lines kept in memory (message and metadata, metadata sorted), for tests that read what a
/// component logged.
final class CapturedLog: Sendable {
    let lines = Mutex<[String]>([])

    var logger: Logger {
        Logger(label: "test.captured") { _ in Handler(log: self) }
    }

    struct Handler: LogHandler {
        let log: CapturedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let all = metadata.merging(event.metadata ?? [:]) { $1 }
            let fields = all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            log.lines.withLock { $0.append("\(event.level) \(event.message) \(fields)") }
        }
    }
}
