import Foundation
import HeraldAPNsVocabulary
import HeraldCore
import HeraldDomain
import HeraldMessaging
import HeraldRecords
import HeraldStore
import Logging
import PostgresNIO
import ServiceLifecycle
import StoreTestSupport
import Synchronization
import Testing

@testable import HeraldCenter
@testable import HeraldKafka

/// Everything a center test needs: PostgreSQL with an app of its own (and a second app, whose
/// devices must never be targeted), and topics of its own on the development broker.
struct CenterEnvironment: Sendable {
    let configuration: HeraldConfiguration
    let database: PostgresClient
    let logger: Logger
    let app: App
    let otherApp: App
    let suffix: String
    var pushesTopic: String { "herald.test.center.pushes.\(suffix)" }
    var jobsTopic: String { "herald.test.center.jobs.\(suffix)" }
    var transactionalJobsTopic: String { "herald.test.center.jobs.transactional.\(suffix)" }
    var outcomesTopic: String { "herald.test.center.outcomes.\(suffix)" }

    var pushes: PushRepository { PushRepository(client: database, logger: logger) }
    var claims: FanoutClaimRepository { FanoutClaimRepository(client: database, logger: logger) }
    var progress: FanoutProgressRepository { FanoutProgressRepository(client: database, logger: logger) }
    var ledger: OutcomeLedger { OutcomeLedger(client: database, logger: logger) }
    var devices: DeviceRepository { DeviceRepository(client: database, logger: logger) }
    var audience: AudienceRepository {
        AudienceRepository(client: database, postgres: configuration.postgres, logger: logger)
    }

    /// Center settings for this environment's topics; `name` tells centers apart.
    func settings(name: String, pageSize: Int = 1000, batchSize: Int = 100, lease: Int = 30_000) -> CenterSettings {
        var settings = configuration.center
        settings.name = name
        settings.groupID = "herald-center-test-\(suffix)"
        settings.pushesTopic = pushesTopic
        settings.jobsTopic = jobsTopic
        settings.transactionalJobsTopic = transactionalJobsTopic
        settings.outcomesTopic = outcomesTopic
        settings.pageSize = pageSize
        settings.batchSize = batchSize
        settings.claimLease = .milliseconds(lease)
        settings.sweepInterval = .milliseconds(100)
        settings.outboxInterval = .milliseconds(50)
        settings.metricsPort = 0
        // Webhook tests run a dispatcher of their own, and watch it alone.
        settings.webhookMaxInFlight = 0
        return settings
    }

    /// Registers devices 0..<count of `app` (tokens derived from `seed` and the number), with
    /// tags and alias chosen by `shape`. Returns their registration ids in order.
    @discardableResult
    func register(
        _ count: Int, app: App? = nil, seed: UInt8 = 1, environment: APNsEnvironment = .production,
        shape: @Sendable (Int) -> (tags: [String], alias: String?) = { _ in ([], nil) }
    ) async throws -> [Int64] {
        let app = app ?? self.app
        var ids: [Int64] = []
        for number in 0..<count {
            let (tags, alias) = shape(number)
            let registered = try await devices.register(
                DeviceRegistration(
                    appID: app.id, token: Self.token(seed: seed, number: number), environment: environment,
                    topic: app.bundleID,
                    alias: alias, tags: tags))
            ids.append(registered.id)
        }
        return ids
    }

    /// Registers `count` plain devices in one statement (for large audiences).
    @discardableResult
    func registerMany(_ count: Int, seed: UInt8 = 9) async throws -> ClosedRange<Int64> {
        let rows = try await database.query(
            """
            WITH inserted AS (
                INSERT INTO devices (app_id, token, environment, topic)
                SELECT \(app.id), decode(lpad(to_hex(\(Int32(seed))), 2, '0') || lpad(to_hex(n), 62, '0'), 'hex'), 'production', \(app.bundleID)
                FROM generate_series(1, \(Int32(count))) AS n
                RETURNING id)
            SELECT min(id), max(id) FROM inserted
            """, logger: logger)
        for try await (low, high) in rows.decode((Int64, Int64).self) { return low...high }
        throw CancellationError()
    }

    static func token(seed: UInt8, number: Int) -> [UInt8] {
        [seed] + withUnsafeBytes(of: UInt32(number).bigEndian) { Array($0) } + (0..<27).map { UInt8($0 &* 5) }
    }

    /// Stores a push (and its "created" event in the outbox, as the Open API does).
    func createPush(
        audience: PushAudience, app: App? = nil, state: PushState = .accepted, scheduledAt: Date? = nil,
        throttlePerSecond: Int? = nil, finishWithin: Int? = nil, recallOf: UUID? = nil, traceparent: String? = nil,
        priorityClass: PushPriorityClass = .campaign, timing: PushTiming? = nil, channel: PushChannel? = nil,
        optionsJSON: String? = nil
    ) async throws -> Push {
        let app = app ?? self.app
        let id = UUID()
        let (push, _) = try await pushes.create(
            NewPush(
                id: id, appID: app.id, state: state, audienceJSON: audience.json, notificationJSON: "{}",
                optionsJSON: optionsJSON ?? channel.map { #"{"channel":"\#($0.rawValue)"}"# } ?? "{}",
                payload: Array(#"{"aps":{"alert":"center test"}}"#.utf8), priorityClass: priorityClass,
                scheduledAt: scheduledAt,
                throttlePerSecond: throttlePerSecond, finishWithinSeconds: finishWithin, recallOf: recallOf,
                timing: timing, traceparent: traceparent),
            announcement: try .pushEvent(
                .created, pushID: id, appID: app.id, topic: pushesTopic, traceparent: traceparent))
        return push
    }

    func cancel(_ push: Push) async throws -> Bool {
        try await pushes.cancel(
            id: push.id, appID: push.definition.appID,
            outbox: [
                try PushRepository.OutboxDraft.pushEvent(
                    .canceled, pushID: push.id, appID: push.definition.appID, topic: pushesTopic)
            ])
    }

    func state(of push: Push) async throws -> PushState? {
        try await pushes.push(id: push.id, appID: push.definition.appID)?.state
    }

    /// Waits until `condition` holds or `timeout` passes (StoreTestSupport's `eventually`).
    func eventually(timeout: Duration = .seconds(60), _ condition: () async throws -> Bool) async rethrows -> Bool {
        try await StoreTestSupport.eventually(timeout: timeout, condition)
    }
}

/// Runs `body` in a database of its own (created for the test, dropped after it): a center
/// claims every claimable push of its database, so tests running side by side must not share one.
func withCenterEnvironment(_ body: @Sendable (CenterEnvironment) async throws -> Void) async throws {
    var configuration = try await HeraldConfiguration.load()
    let logger = Logger(label: "test.center")
    let suffix = String(UUID().uuidString.prefix(8)).lowercased()
    let database = "herald_center_test_\(suffix)"
    try await HeraldDatabase.withClient(settings: configuration.postgres, logger: logger) { admin in
        try await admin.query("CREATE DATABASE \(unescaped: database)", logger: logger)
    }
    configuration.postgres.database = database
    let testConfiguration = configuration
    do {
        try await HeraldDatabase.withClient(settings: configuration.postgres, logger: logger) { client in
            try await MigrationRunner(client: client, logger: logger).migrate()
            let apps = AppRepository(client: client, logger: logger)
            let app = try await apps.create(name: "center test", bundleID: "com.herald.center.\(suffix)")
            let other = try await apps.create(name: "other app", bundleID: "com.herald.other.\(suffix)")
            try await body(
                CenterEnvironment(
                    configuration: testConfiguration, database: client, logger: logger, app: app,
                    otherApp: other, suffix: suffix))
        }
    } catch {
        try? await dropDatabase(database, logger: logger)
        throw error
    }
    try await dropDatabase(database, logger: logger)
}

private func dropDatabase(_ name: String, logger: Logger) async throws {
    let configuration = try await HeraldConfiguration.load()
    try await HeraldDatabase.withClient(settings: configuration.postgres, logger: logger) { admin in
        try await admin.query("DROP DATABASE IF EXISTS \(unescaped: name) WITH (FORCE)", logger: logger)
    }
}

/// A running Msg Center (fan-out, outcome accounting, outbox relay) in this process.
struct RunningCenter: Sendable {
    let center: MsgCenter
    let task: Task<Void, any Error>
    let stop: @Sendable () async -> Void
}

extension CenterEnvironment {
    /// Starts a center with `settings` in a ServiceGroup, composed as herald-center composes it
    /// (``CenterService``); `stop()` shuts it down gracefully.
    func startCenter(
        _ settings: CenterSettings, logger: Logger? = nil, clock: @escaping @Sendable () -> Date = Date.init
    ) throws -> RunningCenter {
        let logger = logger ?? self.logger
        let service = try CenterService(
            settings: settings, configuration: configuration, database: database, logger: logger,
            clientID: "test-center", clock: clock)
        let group = ServiceGroup(configuration: .init(services: [service], logger: logger))
        let task = Task { try await group.run() }
        return RunningCenter(
            center: service.center, task: task,
            stop: {
                await group.triggerGracefulShutdown()
                _ = try? await task.value
            })
    }

    /// Plays herald-sender: reads this environment's job batches and answers each with an
    /// outcome batch — accepted, unless `verdict` says otherwise for a device. Returns what it read.
    /// - Parameter online: the devices it reports acknowledged over their long connection
    ///   (herald-gateway) instead of accepted by APNs; of an online-only push's batch, every
    ///   other device is reported offline.
    func startFakeSender(
        online: Set<Int64> = [], verdict: @escaping @Sendable (Int64) -> BatchOutcome.Failure? = { _ in nil }
    ) throws
        -> JobReader
    {
        try JobReader(environment: self, online: online, answer: verdict)
    }

    /// Reads this environment's job batches without answering them.
    func startJobReader() throws -> JobReader {
        try JobReader(environment: self, online: [], answer: nil)
    }
}

/// Reads the job batches of a test's topic (and, when told, answers them with outcomes).
final class JobReader: Sendable {
    final class Collected: Sendable {
        let batches = Mutex<[Herald_V1_JobBatch]>([])
        /// The trace context of each batch's record header, by batch id.
        let traces = Mutex<[Data: TraceContext]>([:])
        /// The topic each batch was read from, by batch id.
        let topics = Mutex<[Data: String]>([:])
    }
    private let collected = Collected()
    private let task: Task<Void, Never>

    init(
        environment: CenterEnvironment, online: Set<Int64>, answer: (@Sendable (Int64) -> BatchOutcome.Failure?)?
    ) throws {
        let kafka = environment.configuration.kafka
        let consumer = try KafkaConsumer(
            configuration: kafka.consumerConfiguration(
                groupID: "job-reader-\(environment.suffix)-\(UUID().uuidString.prefix(4))",
                topics: [environment.jobsTopic, environment.transactionalJobsTopic],
                clientID: "test-jobs"), logger: environment.logger)
        let producer = try KafkaProducer(
            configuration: kafka.producerConfiguration(clientID: "test-outcomes"), logger: environment.logger)
        let outcomesTopic = environment.outcomesTopic
        let collected = self.collected
        task = Task {
            do {
                while !Task.isCancelled, let messages = try? await consumer.nextBatch()?.messages {
                    var outcomes: [KafkaProducerMessage] = []
                    for message in messages {
                        guard let batch = try? Herald_V1_JobBatch.decodeRecord(message.value) else { continue }
                        collected.batches.withLock { $0.append(batch) }
                        collected.topics.withLock { $0[batch.batchID] = message.topic }
                        if let trace = message.trace { collected.traces.withLock { $0[batch.batchID] = trace } }
                        guard let answer else { continue }
                        var outcome = Herald_V1_OutcomeBatch()
                        outcome.schemaVersion = 1
                        outcome.batchID = batch.batchID
                        outcome.pushID = batch.pushID
                        outcome.appID = batch.appID
                        for target in batch.targets {
                            if let failure = answer(Int64(target.deviceID)) {
                                var record = Herald_V1_OutcomeBatch.Failure()
                                record.deviceID = target.deviceID
                                record.status =
                                    failure.status == .expired
                                    ? .expired : failure.status == .canceled ? .canceled : .rejected
                                record.reason = failure.reason
                                record.httpStatus = UInt32(failure.httpStatus)
                                record.unregisteredAtMs =
                                    failure.unregisteredAt.map { Int64($0.timeIntervalSince1970 * 1000) } ?? 0
                                record.attempts = 1
                                outcome.failures.append(record)
                            } else if online.contains(Int64(target.deviceID)) {
                                outcome.deliveredOnlineDeviceIds.append(target.deviceID)
                            } else if batch.channel == .online {
                                outcome.offlineDeviceIds.append(target.deviceID)
                            } else {
                                outcome.acceptedDeviceIds.append(target.deviceID)
                            }
                        }
                        if let value = try? outcome.encodedRecord() {
                            // As herald-sender does: the batch's trace goes on, from a span of its own.
                            outcomes.append(
                                KafkaProducerMessage(
                                    topic: outcomesTopic, key: Array(batch.pushID), value: value,
                                    headers: message.trace.map { [KafkaHeader(continuing: $0)] } ?? []))
                        }
                    }
                    if !outcomes.isEmpty { _ = try? await producer.send(outcomes) }
                }
            }
            try? await consumer.close()
            await producer.shutdown()
        }
    }

    /// The topics `push`'s batches were read from.
    func topics(of push: Push) -> Set<String> {
        let topics = collected.topics.withLock { $0 }
        return Set(read(push: push).compactMap { topics[$0.batchID] })
    }

    /// The trace context each batch read so far carried, by batch id.
    var traces: [Data: TraceContext] { collected.traces.withLock { $0 } }

    /// The batches read so far, of `push` only if given.
    func read(push: Push? = nil) -> [Herald_V1_JobBatch] {
        let all = collected.batches.withLock { $0 }
        guard let push else { return all }
        let id = push.id.recordBytes
        return all.filter { $0.pushID == id }
    }

    /// Device ids of distinct batches of `push` (a batch read twice, same id, counts once),
    /// with how often each device occurs across distinct batches.
    func deviceCounts(push: Push) -> [Int64: Int] {
        var seen = Set<Data>()
        var counts: [Int64: Int] = [:]
        for batch in read(push: push) where seen.insert(batch.batchID).inserted {
            for target in batch.targets { counts[Int64(target.deviceID), default: 0] += 1 }
        }
        return counts
    }

    func stop() async {
        task.cancel()
        await task.value
    }
}
