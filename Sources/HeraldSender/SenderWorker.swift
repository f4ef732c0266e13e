import Foundation
import HeraldAPNs
import HeraldAPNsVocabulary
import HeraldCore
import HeraldDomain
import HeraldKafka
import HeraldMessaging
import HeraldMetrics
import HeraldRecords
import HeraldStore
import HeraldTiming
import Logging
import ServiceLifecycle
import Synchronization

/// What to do with a job batch before sending it.
public enum BatchVerdict: Sendable, Equatable {
    /// Send it.
    case send
    /// Its push was canceled: drop it, every target counted as canceled.
    case canceled
    /// Its outcome is already accounted: this is a second copy (a fan-out resumed after its
    /// center died between producing and recording, or a record seen again after a
    /// rebalance). Its devices have it; nothing is sent or published.
    case accounted
    /// Another copy of it (another Kafka record with the same batch id) is being sent: that
    /// copy's outcome accounts for it; nothing is sent or published.
    case anotherCopySending
    /// This very record is being sent by another sender, or an earlier hand-out of this one,
    /// that is alive (the group moved its partition meanwhile): ask again until its outcome is
    /// accounted, or its sender dies, or the takeover time passes.
    case sameCopyInFlight
    /// No push of the record's app has the record's push id: nobody asked for it. It is not
    /// sent (whatever content, with whichever app's credential it names) but dead-lettered.
    case noSuchPush
}

/// A job record whose push no app of this database has (``BatchVerdict/noSuchPush``).
struct UnknownPush: Error, CustomStringConvertible {
    var pushID: UUID
    var appID: UUID
    var description: String { "app \(appID) has no push \(pushID): not sent (nobody asked for it)" }
}

/// Decides ``BatchVerdict``s.
public protocol BatchGate: Sendable {
    /// - Parameter copy: the Kafka record the batch came from (topic/partition/offset).
    func verdict(pushID: UUID, appID: UUID, sequence: Int32, copy: String) async -> BatchVerdict

    /// Keeps `copy` of the batch — taken by this sender's verdict ``BatchVerdict/send`` — taken
    /// while the sender holds it (sending, retrying, publishing its outcome), so that no other
    /// copy is sent beside it; runs until its task is cancelled. A gate that keeps nothing taken
    /// returns at once (the default).
    func holding(pushID: UUID, sequence: Int32, copy: String) async
}

extension BatchGate {
    public func holding(pushID: UUID, sequence: Int32, copy: String) async {}
}

/// Verdicts from PostgreSQL: one statement per batch
/// (``PushRepository/batchStatus(pushID:appID:sequence:copy:takeoverAfter:)``), which also notes
/// the copy being sent. When PostgreSQL cannot answer — an error, or no answer within
/// `answerWithin` (a pool waiting for a database that is down) — the batch is sent (at least once).
public struct StoredBatchGate: BatchGate {
    private let pushes: PushRepository
    private let takeoverAfter: Duration
    private let answerWithin: Duration
    private let logger: Logger?
    /// When the last warning was logged (at most one every 10 s while the database is away).
    private let lastWarning = LastWarning()
    /// The same, for notes that a batch is still being sent.
    private let lastHoldingWarning = LastWarning()

    /// - Parameters:
    ///   - takeoverAfter: another copy whose sending started longer ago than this may be sent
    ///     (`HERALD_SENDER_BATCH_TAKEOVER_MS`).
    ///   - answerWithin: how long a batch waits for the database's verdict before it is sent
    ///     without one.
    public init(
        pushes: PushRepository, takeoverAfter: Duration = .seconds(300), answerWithin: Duration = .seconds(5),
        logger: Logger? = nil
    ) {
        self.pushes = pushes
        self.takeoverAfter = takeoverAfter
        self.answerWithin = answerWithin
        self.logger = logger
    }

    public func verdict(pushID: UUID, appID: UUID, sequence: Int32, copy: String) async -> BatchVerdict {
        let status: PushRepository.BatchStatus?
        do {
            status = try await pushes.batchStatus(
                pushID: pushID, appID: appID, sequence: sequence,
                copy: copy, takeoverAfter: takeoverAfter, answerWithin: answerWithin)
        } catch {
            if lastWarning.due(every: .seconds(10)) {
                logger?.warning(
                    "no verdict from the database; batches are sent without one",
                    metadata: [
                        "push": "\(pushID)", "sequence": "\(sequence)", "error": "\(HeraldDatabase.describe(error))",
                    ])
            }
            return .send
        }
        guard let status else { return .noSuchPush }
        if status.accounted { return .accounted }
        if status.canceled { return .canceled }
        if status.sameCopyInFlight { return .sameCopyInFlight }
        return status.anotherCopySending ? .anotherCopySending : .send
    }

    /// Notes `copy` as still being sent every third of the takeover time (at least every 100 ms)
    /// (``PushRepository/stillSending(pushID:sequence:copy:within:)``), so a copy whose sender
    /// lives and reaches the database is not taken over, however long APNs or the broker keep
    /// it: a re-drive produced meanwhile, or this record handed to another sender, is not sent a
    /// second time. A note the database does not take within `answerWithin` is tried again a
    /// second later, so one slow answer does not let the takeover time pass. Only a sender that
    /// died, or lost the database for about the takeover time, leaves its copy to be taken over.
    public func holding(pushID: UUID, sequence: Int32, copy: String) async {
        guard takeoverAfter > .zero else { return }
        let every = max(takeoverAfter / 3, .milliseconds(100))
        var wait = every
        while true {
            do { try await Task.sleep(for: wait) } catch { return }
            do {
                try await pushes.stillSending(pushID: pushID, sequence: sequence, copy: copy, within: answerWithin)
                wait = every
            } catch {
                if Task.isCancelled { return }
                wait = min(every, .seconds(1))
                if lastHoldingWarning.due(every: .seconds(10)) {
                    logger?.warning(
                        "cannot note a batch as still being sent; another copy may be sent after the takeover time",
                        metadata: [
                            "push": "\(pushID)", "sequence": "\(sequence)",
                            "error": "\(HeraldDatabase.describe(error))",
                        ])
                }
            }
        }
    }
}

/// Whether a repeated warning is due again.
final class LastWarning: Sendable {
    private let last = Mutex<ContinuousClock.Instant?>(nil)

    func due(every interval: Duration) -> Bool {
        let now = ContinuousClock.now
        return last.withLock { last in
            if let previous = last, now - previous < interval { return false }
            last = now
            return true
        }
    }
}

/// Where a worker pulls job batches from: a consumer and its own share of batches in flight.
struct JobSource: Sendable {
    let consumer: KafkaConsumer
    let slots: BatchSlots
    /// Transactional pushes' batches: their notifications take APNs streams first.
    let urgent: Bool
    /// How many of its batches may be at the gateways at once; nil: as many as are in flight.
    var gatewaySlots: BatchSlots? = nil
}

/// Pulls job batches from Kafka and sends them to APNs: campaign batches from `herald.jobs` and,
/// with a consumer of their own and their own share of batches in flight, transactional ones
/// from `herald.jobs.transactional`, so a campaign's backlog never delays a login code.
public final class SenderWorker: Service, Sendable {
    private let sources: [JobSource]
    private let producer: KafkaProducer
    private let credentials: CredentialStore
    private let gate: (any BatchGate)?
    private let sender: JobBatchSender
    /// The long-connection road, when the sender takes it (``OnlineRouter``).
    private let online: OnlineRouter?
    private let outcomesTopic: String
    private let logger: Logger
    private let tracker = Mutex(OffsetTracker())
    /// The next offset of each partition after the last stored one (for the lag metric).
    private let storedOffsets = Mutex<[KafkaTopicPartition: Int64]>([:])
    /// When a credential that does not decrypt was last logged.
    private let undecryptableWarning = LastWarning()
    /// Counts for `/metrics`.
    public let metrics: SenderMetrics

    /// - Parameters:
    ///   - consumer: campaign job batches (`herald.jobs`), at most `maxBatchesInFlight` at once,
    ///     of which at most `maxOnlineBatchesInFlight` hand pushes to gateways at once.
    ///   - transactionalConsumer: transactional ones (`herald.jobs.transactional`), at most
    ///     `maxTransactionalBatchesInFlight` at once beside them; nil reads none.
    public init(
        consumer: KafkaConsumer, transactionalConsumer: KafkaConsumer? = nil, producer: KafkaProducer,
        credentials: CredentialStore, gate: (any BatchGate)?, sender: JobBatchSender = .init(),
        online: OnlineRouter? = nil, maxBatchesInFlight: Int = SenderSettings.defaultMaxBatchesInFlight,
        maxOnlineBatchesInFlight: Int = SenderSettings.defaultMaxOnlineBatchesInFlight,
        maxTransactionalBatchesInFlight: Int = 8,
        outcomesTopic: String = HeraldTopic.outcomes.name, logger: Logger
    ) {
        self.online = online
        self.outcomesTopic = outcomesTopic
        var sources = [
            JobSource(
                consumer: consumer, slots: BatchSlots(count: max(1, maxBatchesInFlight)), urgent: false,
                gatewaySlots: maxOnlineBatchesInFlight < maxBatchesInFlight
                    ? BatchSlots(count: max(1, maxOnlineBatchesInFlight)) : nil)
        ]
        if let transactionalConsumer {
            sources.append(
                JobSource(
                    consumer: transactionalConsumer, slots: BatchSlots(count: max(1, maxTransactionalBatchesInFlight)),
                    urgent: true))
        }
        self.sources = sources
        self.producer = producer
        self.credentials = credentials
        self.gate = gate
        var sender = sender
        let metrics = sender.metrics ?? SenderMetrics()
        sender.metrics = metrics
        sender.logger = logger
        self.sender = sender
        self.metrics = metrics
        self.logger = logger
    }

    /// The most campaign batches that were at the gateways at once so far; nil when they are not
    /// bounded apart from the batches in flight.
    var mostBatchesAtGateways: Int? { sources.first?.gatewaySlots?.mostHeld }

    public func run() async throws {
        await producer.prepare(topics: [outcomesTopic])
        try await withThrowingDiscardingTaskGroup { group in
            for source in sources {
                group.addTask { try await self.pull(from: source) }
            }
        }
    }

    /// Pulls `source`'s batches while it has a free slot, each sent in a task of its own.
    private func pull(from source: JobSource) async throws {
        try await withThrowingDiscardingTaskGroup { group in
            for try await message in source.consumer.messages {
                await source.slots.acquire()
                tracker.withLock { $0.begin(message) }
                metrics.batchesInFlight.add(1, ordering: .relaxed)
                group.addTask {
                    await self.process(message, from: source)
                    self.metrics.batchesInFlight.subtract(1, ordering: .relaxed)
                    source.slots.release()
                }
            }
            // Graceful shutdown: no more pulls; the batches in flight finish, publish and store.
        }
    }

    private func process(_ message: KafkaConsumerMessage, from source: JobSource) async {
        let outcome: Herald_V1_OutcomeBatch
        // The push's trace (from the record's traceparent header) goes into every line about the
        // batch, and on to its outcome record.
        let trace = message.trace
        var logger = self.logger
        if let trace { logger[metadataKey: "trace"] = "\(trace.traceID)" }
        // Once the gate let this worker send the batch, until its outcome is published, its copy
        // stays taken (``BatchGate/holding(pushID:sequence:copy:)``).
        var holding: Task<Void, Never>?
        defer { holding?.cancel() }
        do {
            let batch = try PackedJobBatch.decodeRecord(message.value)
            logger[metadataKey: "push"] = "\(UUID(data: batch.header.pushID))"
            guard
                let sent = try await send(
                    batch, copy: "\(message.topic)/\(message.partition)/\(message.offset)", from: source,
                    holding: &holding, logger: logger)
            else {
                finish(message, from: source)
                return
            }
            outcome = sent
            logger.debug(
                "batch sent",
                metadata: [
                    "sequence": "\(batch.header.sequence)", "targets": "\(batch.targets.count)",
                    "failed": "\(outcome.failures.count)",
                ])
        } catch is CancellationError {
            // Stopped before the batch could be sent: its offset is not stored, so the record
            // comes again to whoever owns the partition next.
            return
        } catch {
            // The offset moves only once the broker took the dead letter; stopped before that,
            // the record comes again.
            do {
                try await producer.deadLetterUntilAcknowledged(
                    message, reason: "\(error)", consumer: "herald-sender", logger: logger)
            } catch {
                return
            }
            finish(message, from: source)
            return
        }
        await publish(outcome, pushID: outcome.pushID, trace: trace, logger: logger)
        finish(message, from: source)
    }

    /// The batch's outcome, or nil for a second copy of a batch already accounted or being sent.
    /// - Parameter holding: set to the task that keeps `copy` taken, once the gate let it be sent.
    /// - Throws: `RecordDecodingError` for a record no herald-center writes, ``UnknownPush`` for one
    ///   no push of its app stands behind (both dead-lettered, not sent); `CancellationError`
    ///   when stopped while waiting for the app's credential.
    private func send(
        _ batch: PackedJobBatch, copy: String, from source: JobSource, holding: inout Task<Void, Never>?,
        logger: Logger
    ) async throws -> Herald_V1_OutcomeBatch? {
        let urgent = source.urgent
        let sequence = try batch.checkedSequence()
        let pushID = UUID(data: batch.header.pushID)
        let appID = UUID(data: batch.header.appID)
        var verdict = await gate?.verdict(pushID: pushID, appID: appID, sequence: sequence, copy: copy) ?? .send
        if verdict == .sameCopyInFlight {
            // Its sender finishes it and publishes the outcome; ask until that is accounted.
            metrics.batchesWaitingForAnotherSender.add(1, ordering: .relaxed)
            defer { metrics.batchesWaitingForAnotherSender.subtract(1, ordering: .relaxed) }
            logger.info(
                "this record is being sent by a live sender (its partition moved meanwhile); waiting for its outcome",
                metadata: ["sequence": "\(batch.header.sequence)", "copy": "\(copy)"])
            var pause = Duration.milliseconds(100)
            while verdict == .sameCopyInFlight {
                try await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(2))
                verdict = await gate?.verdict(pushID: pushID, appID: appID, sequence: sequence, copy: copy) ?? .send
            }
        }
        switch verdict {
        case .send:
            if let gate { holding = Task { await gate.holding(pushID: pushID, sequence: sequence, copy: copy) } }
        case .canceled:
            return counted(Self.everyTarget(of: batch, status: .canceled, reason: "Canceled"))
        case .noSuchPush:
            throw UnknownPush(pushID: pushID, appID: appID)
        case .accounted, .anotherCopySending, .sameCopyInFlight:
            metrics.duplicateBatches.add(1, ordering: .relaxed)
            logger.debug(
                "a second copy of a batch already accounted or being sent; not sent",
                metadata: ["sequence": "\(batch.header.sequence)", "copy": "\(copy)"])
            return nil
        }
        // An online-only push needs no APNs credential: nothing of it goes through APNs.
        if batch.header.channel == .online { return await sendOnline(batch, gatewaySlots: source.gatewaySlots) }
        guard let environment = APNsEnvironment(batch.header.environment) else {
            return counted(Self.everyTarget(of: batch, status: .rejected, reason: "NoEnvironment"))
        }
        do {
            let client = try await client(appID: appID, environment: environment)
            guard let online, batch.header.channel != .apns else {
                return try await sender.send(batch, with: client, urgent: urgent)
            }
            return try await send(
                batch, with: client, urgent: urgent, online: online, gatewaySlots: source.gatewaySlots)
        } catch is CancellationError {
            throw CancellationError()
        } catch let error as MissingCredential {
            logger.warning("no APNs credential", metadata: ["error": "\(error)"])
            return counted(
                Self.everyTarget(of: batch, status: .rejected, reason: BatchOutcome.Failure.missingCredentialReason))
        } catch {
            logger.error("APNs credential unusable", metadata: ["error": "\(error)"])
            return counted(
                Self.everyTarget(of: batch, status: .rejected, reason: BatchOutcome.Failure.invalidCredentialReason))
        }
    }

    /// Sends `batch` with its connected targets' pushes handed to their gateways (docs/gateway.md):
    /// the other targets go through APNs at once; the connected ones that did not acknowledge in
    /// time go through APNs after, with the same apns-id, so the phone shows one copy whichever
    /// arrives. A recall's batch hands connected targets a revoke frame instead (reached once
    /// written). One outcome for the whole batch, as always. With `gatewaySlots`, the handing over
    /// waits for a slot (the APNs targets do not).
    private func send(
        _ batch: PackedJobBatch, with client: APNsClient, urgent: Bool, online: OnlineRouter, gatewaySlots: BatchSlots?
    ) async throws -> Herald_V1_OutcomeBatch {
        let connected = await online.connected(batch)
        guard !connected.isEmpty else { return try await sender.send(batch, with: client, urgent: urgent) }
        let connectedDevices = Set(connected.keys)
        async let reached = Self.holding(gatewaySlots, counting: metrics) {
            await online.deliver(JobBatchNotifications(batch), to: connected, revoking: batch.header.revokesPushID)
        }
        var outcome = try await sender.send(batch, with: client, urgent: urgent, skipping: connectedDevices)
        // Only devices of this batch that were offered count, whatever a gateway answers.
        let acknowledged = (await reached).intersection(connectedDevices)
        let late = connectedDevices.subtracting(acknowledged)
        if !late.isEmpty {
            let rest = try await sender.send(
                batch, with: client, urgent: urgent, skipping: Set(batch.targets.deviceIDs).subtracting(late),
                countsBatch: false)
            outcome.acceptedDeviceIds = (outcome.acceptedDeviceIds + rest.acceptedDeviceIds).sorted()
            outcome.failures = (outcome.failures + rest.failures).sorted { $0.deviceID < $1.deviceID }
            outcome.completedAtMs = rest.completedAtMs
        }
        outcome.deliveredOnlineDeviceIds = acknowledged.sorted().map { UInt64(bitPattern: $0) }
        return outcome
    }

    /// Sends an online-only push's batch (`options.channel` `online`): to its connected targets'
    /// gateways only. A target whose notification cannot be sent (no token, a render over the
    /// limit) is rejected with the reason, as on the APNs road; a batch past its expiration is
    /// expired; the targets not connected, or not acknowledging in time, are reported offline
    /// (counted skipped, reason `offline`) — also when presence cannot be read or a gateway does
    /// not answer (an in-app message is not kept for later). A sender that does not take the
    /// online road (`HERALD_SENDER_ONLINE` off) reports them all offline.
    private func sendOnline(_ batch: PackedJobBatch, gatewaySlots: BatchSlots?) async -> Herald_V1_OutcomeBatch {
        let notifications = JobBatchNotifications(batch)
        var outcome = Herald_V1_OutcomeBatch(of: batch.header)
        var failures: [Int64: Herald_V1_OutcomeBatch.Failure] = [:]
        let expired = notifications.shared.expiration.map { $0 > 0 && $0 * 1000 < sender.now() } ?? false
        for index in 0..<notifications.count {
            let deviceID = batch.targets.deviceIDs[notifications.target(at: index)]
            var failure = Herald_V1_OutcomeBatch.Failure()
            failure.deviceID = UInt64(bitPattern: deviceID)
            failure.attempts = 0
            if let problem = notifications.problem(at: index) {
                failure.status = .rejected
                failure.reason = problem
            } else if expired {
                failure.status = .expired
                failure.reason = "Expired"
            } else {
                continue
            }
            failures[deviceID] = failure
        }
        var acknowledged = Set<Int64>()
        if let online, failures.count < notifications.count {
            let connected = await online.connected(batch).filter { failures[$0.key] == nil }
            if !connected.isEmpty {
                acknowledged = await Self.holding(gatewaySlots, counting: metrics) {
                    await online.deliver(notifications, to: connected)
                }.intersection(connected.keys)
            }
        }
        for deviceID in batch.targets.deviceIDs.sorted() {
            if let failure = failures[deviceID] {
                outcome.failures.append(failure)
            } else if acknowledged.contains(deviceID) {
                outcome.deliveredOnlineDeviceIds.append(UInt64(bitPattern: deviceID))
            } else {
                outcome.offlineDeviceIds.append(UInt64(bitPattern: deviceID))
            }
        }
        outcome.completedAtMs = sender.now()
        metrics.record(
            accepted: 0,
            failures: outcome.failures.map { (JobBatchSender.statusName($0.status), $0.reason) }
                + Array(repeating: ("skipped", SkipReason.offline.rawValue), count: outcome.offlineDeviceIds.count),
            attempts: 0, latencies: [])
        return outcome
    }

    /// The app's client; while its credential cannot be read from the database (and none was
    /// loaded before), or cannot be decrypted with the configured master keys, the batch waits —
    /// a database outage or a missing key rejects nothing. A credential that does not decrypt is
    /// logged as an error (every 10 s at most) and counted in
    /// `herald_sender_batches_waiting_for_credential` while its batches wait.
    private func client(appID: UUID, environment: APNsEnvironment) async throws -> APNsClient {
        var waits = Backoff.outage.delays()
        var counted = false
        defer { if counted { metrics.batchesWaitingForCredential.subtract(1, ordering: .relaxed) } }
        while true {
            do {
                return try await credentials.client(appID: appID, environment: environment)
            } catch is CredentialUnavailable {
                try await Task.sleep(for: waits.next())
            } catch let error as CredentialSealedOtherwise {
                if !counted {
                    counted = true
                    metrics.batchesWaitingForCredential.add(1, ordering: .relaxed)
                }
                if undecryptableWarning.due(every: .seconds(10)) {
                    logger.error(
                        "APNs credential cannot be decrypted; its batches wait (none rejected)",
                        metadata: ["error": "\(error)"])
                }
                try await Task.sleep(for: waits.next())
            }
        }
    }

    private func counted(_ outcome: Herald_V1_OutcomeBatch) -> Herald_V1_OutcomeBatch {
        metrics.record(
            accepted: 0, failures: outcome.failures.map { (JobBatchSender.statusName($0.status), $0.reason) },
            attempts: 0, latencies: [])
        return outcome
    }

    /// Publishes until the broker takes it (a broker outage holds the batch, and with it the
    /// partition's offsets, until it is back).
    private func publish(_ outcome: Herald_V1_OutcomeBatch, pushID: Data, trace: TraceContext?, logger: Logger) async {
        guard let value = try? outcome.encodedRecord() else { return }
        var waits = Backoff.outage.delays()
        while true {
            do {
                _ = try await producer.send(
                    KafkaProducerMessage(
                        topic: outcomesTopic, key: Array(pushID), value: value,
                        headers: trace.map { [KafkaHeader(continuing: $0)] } ?? []))
                return
            } catch {
                let delay = waits.next()
                logger.warning(
                    "cannot publish outcomes; retrying", metadata: ["error": "\(error)", "retry-in": "\(delay)"])
                try? await Task.sleep(for: delay)
            }
        }
    }

    private func finish(_ message: KafkaConsumerMessage, from source: JobSource) {
        guard let store = tracker.withLock({ $0.finish(message) }) else { return }
        do {
            try source.consumer.storeOffset(for: store)
            storedOffsets.withLock {
                $0[KafkaTopicPartition(topic: store.topic, partition: store.partition)] = store.offset + 1
            }
        } catch {
            // The partition was taken away meanwhile: its new owner starts from the committed
            // offset, and this batch's notifications carry the same apns-id and collapse id.
            logger.info(
                "offset not stored (partition reassigned?)",
                metadata: [
                    "partition": "\(store.partition)", "offset": "\(store.offset)", "error": "\(error)",
                ])
        }
    }

    /// Job batches not finished yet in the partitions this worker owns: each partition's high
    /// watermark minus the offset after its last stored one, in Prometheus text format. A
    /// partition with nothing stored by this worker yet is left out (its lag is unknown here).
    public func lagPrometheusText() -> String {
        var marks: [KafkaTopicPartition: Int64] = [:]
        for source in sources { marks.merge(source.consumer.highWatermarks()) { $1 } }
        let stored = storedOffsets.withLock { $0 }
        var text = PrometheusText()
        text.family("herald_sender_consumer_lag", .gauge, help: "Job batches behind in each owned partition.")
        for (partition, high) in marks.sorted(by: {
            ($0.key.topic, $0.key.partition) < ($1.key.topic, $1.key.partition)
        }) {
            guard let next = stored[partition] else { continue }
            text.sample(
                "herald_sender_consumer_lag", ["topic": partition.topic, "partition": String(partition.partition)],
                value: max(0, high - next))
        }
        return text.text
    }

    static func everyTarget(of batch: PackedJobBatch, status: Herald_V1_OutcomeBatch.Status, reason: String)
        -> Herald_V1_OutcomeBatch
    {
        var outcome = Herald_V1_OutcomeBatch(of: batch.header)
        outcome.failures = batch.targets.deviceIDs.map { deviceID in
            var failure = Herald_V1_OutcomeBatch.Failure()
            failure.deviceID = UInt64(bitPattern: deviceID)
            failure.status = status
            failure.reason = reason
            return failure
        }
        outcome.completedAtMs = Int64(Date().timeIntervalSince1970 * 1000)
        return outcome
    }
}

extension SenderWorker {
    /// `body`'s result, run while holding one of `slots` (at once when nil); while it waits for
    /// one, it is counted in `waiting`.
    static func holding<Result: Sendable>(
        _ slots: BatchSlots?, counting waiting: SenderMetrics? = nil, _ body: @Sendable () async -> Result
    ) async -> Result {
        guard let slots else { return await body() }
        if !slots.tryAcquire() {
            waiting?.batchesWaitingForGateways.add(1, ordering: .relaxed)
            await slots.acquire()
            waiting?.batchesWaitingForGateways.subtract(1, ordering: .relaxed)
        }
        defer { slots.release() }
        return await body()
    }
}

/// A counting semaphore for batches in flight; waiters queue in order.
final class BatchSlots: Sendable {
    private struct State {
        var free: Int
        var waiters: [CheckedContinuation<Void, Never>] = []
        /// The most slots held at once so far.
        var mostHeld = 0
        let count: Int

        mutating func take() {
            free -= 1
            mostHeld = max(mostHeld, count - free)
        }
    }

    private let state: Mutex<State>

    init(count: Int) { state = Mutex(State(free: count, count: count)) }

    /// The most slots held at once so far.
    var mostHeld: Int { state.withLock { $0.mostHeld } }

    /// Takes a slot if one is free now (a waiter never is passed over: slots freed while others
    /// wait go to them).
    func tryAcquire() -> Bool {
        state.withLock { state -> Bool in
            guard state.free > 0 else { return false }
            state.take()
            return true
        }
    }

    func acquire() async {
        if tryAcquire() { return }
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                if state.free > 0 {
                    state.take()
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    func release() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.waiters.isEmpty {
                state.free += 1
                return nil
            }
            return state.waiters.removeFirst()
        }
        waiter?.resume()
    }
}
