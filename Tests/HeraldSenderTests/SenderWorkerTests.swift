import APNsSimulator
import Crypto
import Foundation
import HeraldAPNs
import HeraldCore
import HeraldDomain
import HeraldMessaging
import HeraldRecords
import HeraldSender
import HeraldStore
import HeraldTiming
import Logging
import ServiceLifecycle
import StoreTestSupport
import Testing

@testable import HeraldKafka

/// The sender worker in-process: job batches from the development broker, the app's credential
/// from PostgreSQL (sealed with a master key), notifications to apns-sim over TLS, outcomes back
/// on the broker. `make test` starts PostgreSQL and the broker.
@Suite("herald-sender worker through Kafka, PostgreSQL and apns-sim", .serialized)
struct SenderWorkerTests {
    @Test("a job record's traceparent reaches the worker's log lines and goes on, same trace, on its outcome record")
    func traceContextGoesThrough() async throws {
        try await withWorkerEnvironment(deliverable: 200) { environment in
            let trace = try #require(
                TraceContext(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))
            let batchIDs = try await environment.produceJobs(batches: 2, targets: 100, trace: trace)
            let captured = CapturedLog()
            let (_, services) = try makeWorker(environment, logger: captured.logger)
            let outcomes = try await withThrowingTaskGroup(
                of: [Data: (outcome: Herald_V1_OutcomeBatch, trace: TraceContext?)]?.self
            ) {
                tasks in
                tasks.addTask {
                    try await services.run()
                    return nil
                }
                tasks.addTask {
                    let outcomes = try await environment.collectOutcomeRecords(batchIDs)
                    await services.triggerGracefulShutdown()
                    return outcomes
                }
                var collected: [Data: (outcome: Herald_V1_OutcomeBatch, trace: TraceContext?)] = [:]
                for try await result in tasks { if let result { collected = result } }
                return collected
            }
            #expect(Set(outcomes.keys) == batchIDs)
            for (_, record) in outcomes {
                #expect(record.trace?.traceID == trace.traceID)
                #expect(record.trace?.parentID != trace.parentID, "the sender passes it on from a span of its own")
                #expect(record.trace?.flags == "01")
            }
            let sent = captured.lines.withLock { $0 }.filter { $0.contains("batch sent") }
            #expect(sent.count == 2)
            #expect(sent.allSatisfy { $0.contains("trace=\(trace.traceID)") }, "\(sent)")
        }
    }

    @Test(
        "a transactional push's batch overtakes a campaign's backlog: read from its own topic with its own batch in flight, it is answered while the campaign's batches still wait"
    )
    func transactionalOvertakesCampaignBacklog() async throws {
        // Every answer takes 200 ms and the campaign has one batch in flight: its 100 batches
        // take at least 20 s — room for the second consumer's group join on a loaded machine.
        // The transactional batch is produced after all of them; read from the same topic it
        // would be answered last.
        var faults = APNsFaults()
        faults.latency = .init(milliseconds: 200)
        try await withWorkerEnvironment(deliverable: 2000, faults: faults) { environment in
            let campaign = try await environment.produceJobs(batches: 100, targets: 20)
            let transactional = try #require(
                try await environment.produceJobs(
                    batches: 1, targets: 1, topic: environment.transactionalJobsTopic
                ).first)
            let (_, services) = try makeWorker(environment, maxBatchesInFlight: 1)
            let order = try await withThrowingTaskGroup(of: [Data]?.self) { tasks in
                tasks.addTask {
                    try await services.run()
                    return nil
                }
                tasks.addTask {
                    let order = try await environment.outcomeOrder(campaign.union([transactional]))
                    await services.triggerGracefulShutdown()
                    return order
                }
                var order: [Data] = []
                for try await result in tasks { if let result { order = result } }
                return order
            }
            #expect(Set(order) == campaign.union([transactional]), "every batch answered")
            let position = try #require(order.firstIndex(of: transactional))
            #expect(
                position < campaign.count - 10,
                "answered after \(position) of the campaign's \(campaign.count) batches: it waited behind the backlog")
        }
    }

    @Test(
        "2,000 targets in 20 batches: one outcome per target, apns-sim got exactly the deliverable ones, offsets stored; a canceled push's jobs are dropped as canceled; second copies of batches already accounted are not sent"
    )
    func batchesThroughTheBroker() async throws {
        try await withWorkerEnvironment(deliverable: 1900, unregistered: 50) { environment in
            let batchIDs = try await environment.produceJobs(batches: 20, targets: 100)
            // A job record no stored push stands behind (anyone who can write to the topic could
            // produce it): never sent, dead-lettered.
            let unknownPush = UUID()
            _ = try await environment.produceJobs(batches: 1, targets: 10, pushID: unknownPush, storePush: false)
            // Records no herald-center writes, each with its reason on the dead-letter topic;
            // the worker goes on with the rest.
            let crafted = try await craftedJobRecords(environment)
            try await environment.produceRawJobs(crafted.map(\.record))
            // A second push, canceled after its jobs were cut: none of them may reach a phone.
            let canceledPush = UUID()
            let pushes = PushRepository(client: environment.database, logger: environment.logger)
            _ = try await pushes.create(
                NewPush(
                    id: canceledPush, appID: environment.appID, audienceJSON: "{}", notificationJSON: "{}",
                    payload: Array(#"{"aps":{}}"#.utf8)),
                announcement: .init(topic: "herald.test.sender.pushes", key: nil, value: []))
            #expect(try await pushes.cancel(id: canceledPush, appID: environment.appID))
            let canceledBatchIDs = try await environment.produceJobs(
                batches: 2, targets: 100, pushID: canceledPush, storePush: false)
            // A third push whose two batches were already sent and accounted (as herald-center
            // records it); copies of them come again, as after a resumed fan-out: not sent twice.
            let accountedPush = UUID()
            _ = try await pushes.create(
                NewPush(
                    id: accountedPush, appID: environment.appID, audienceJSON: "{}", notificationJSON: "{}",
                    payload: Array(#"{"aps":{}}"#.utf8)),
                announcement: .init(topic: "herald.test.sender.pushes", key: nil, value: []))
            try await environment.database.query(
                """
                INSERT INTO push_batches (push_id, sequence, first_device, last_device, target_count, produced_at, completed_at)
                VALUES (\(accountedPush), 0, 1, 100, 100, now(), now()), (\(accountedPush), 1, 101, 200, 100, now(), now())
                """, logger: environment.logger)
            _ = try await environment.produceJobs(batches: 2, targets: 100, pushID: accountedPush, storePush: false)
            let logger = environment.logger
            let configuration = environment.configuration
            let (worker, services) = try makeWorker(environment)

            /// Whether every owned partition with a stored offset is at lag 0.
            @Sendable func caughtUp(_ text: String) -> Bool {
                let lines = text.split(separator: "\n").filter { $0.hasPrefix("herald_sender_consumer_lag{") }
                return !lines.isEmpty && lines.allSatisfy { $0.hasSuffix(" 0") }
            }
            let (outcomes, lag) = try await withThrowingTaskGroup(of: ([Data: Herald_V1_OutcomeBatch], String)?.self) {
                tasks in
                tasks.addTask {
                    try await services.run()
                    return nil
                }
                tasks.addTask {
                    let outcomes = try await environment.collectOutcomes(batchIDs.union(canceledBatchIDs))
                    // Offsets are stored just after outcomes are published (and the accounted
                    // copies are skipped without one): give the last ones a moment.
                    var lag = worker.lagPrometheusText()
                    let deadline = ContinuousClock.now + .seconds(10)
                    while !(caughtUp(lag)
                        && worker.metrics.prometheusText().contains("herald_sender_duplicate_batches_total 2\n")),
                        ContinuousClock.now < deadline
                    {
                        try await Task.sleep(for: .milliseconds(50))
                        lag = worker.lagPrometheusText()
                    }
                    await services.triggerGracefulShutdown()
                    return (outcomes, lag)
                }
                var collected: ([Data: Herald_V1_OutcomeBatch], String) = ([:], "")
                for try await result in tasks { if let result { collected = result } }
                return collected
            }

            #expect(Set(outcomes.keys) == batchIDs.union(canceledBatchIDs))
            let canceled = canceledBatchIDs.compactMap { outcomes[$0] }
            #expect(canceled.flatMap(\.acceptedDeviceIds).isEmpty)
            #expect(canceled.flatMap(\.failures).count == 200)
            #expect(canceled.flatMap(\.failures).allSatisfy { $0.status == .canceled })
            let accepted = batchIDs.compactMap { outcomes[$0] }.flatMap(\.acceptedDeviceIds)
            let failures = batchIDs.compactMap { outcomes[$0] }.flatMap(\.failures)
            #expect(accepted.count + failures.count == 2000)
            #expect(Set(accepted) == Set((1...1900).map(UInt64.init)))
            let unregistered = failures.filter { $0.reason == "Unregistered" }
            #expect(unregistered.count == 50)
            #expect(unregistered.allSatisfy { $0.unregisteredAtMs == 1_700_000_000_000 + Int64($0.deviceID) })
            #expect(failures.filter { $0.reason == "BadDeviceToken" }.count == 50)
            #expect(environment.simulator.ledger.counts.accepted == 1900, "the unknown push's 10 devices got nothing")
            let letters = try await environment.deadLetters(from: environment.jobsTopic, count: 1 + crafted.count)
            #expect(letters.count == 1 + crafted.count)
            #expect(letters.contains { $0.reason.contains("has no push \(unknownPush)") })
            for (record, reason) in crafted {
                let found = letters.contains { $0.reason.contains(reason) && Array($0.originalValue) == record }
                #expect(found, "a dead letter saying \(reason)")
            }
            #expect(Set(environment.simulator.ledger.notifications().map(\.token)).count == 1900)
            #expect(worker.metrics.batches == 22)
            #expect(worker.metrics.prometheusText().contains("herald_sender_duplicate_batches_total 2\n"))
            // Everything done: every owned partition is at lag 0.
            #expect(caughtUp(lag), "\(lag)")
            #expect(
                worker.metrics.prometheusText().contains(
                    #"herald_sender_notifications_total{outcome="rejected",reason="Unregistered"} 50"#))

            // Every batch's offset was stored and committed: a new member of the group gets nothing.
            let again = try KafkaConsumer(
                configuration: configuration.kafka.consumerConfiguration(
                    groupID: environment.group, topics: [environment.jobsTopic], clientID: "test-again"),
                logger: logger)
            var redelivered = 0
            let deadline = ContinuousClock.now + .seconds(8)
            while ContinuousClock.now < deadline {
                guard let (messages, _) = try await again.nextBatch() else { break }
                redelivered += messages.count
            }
            try await again.close()
            #expect(redelivered == 0)
        }
    }

    @Test(
        "a credential that does not decrypt with the configured master key holds its batches (counted, none rejected) until a credential that does is stored"
    )
    func undecryptableCredentialWaits() async throws {
        try await withWorkerEnvironment(deliverable: 200) { environment in
            let credentials = CredentialRepository(client: environment.database, logger: environment.logger)
            let stored = try #require(try await credentials.credentials(appID: environment.appID).first)
            // The same key sealed under a master key this worker does not hold (a key left out of
            // HERALD_MASTER_KEY_DECRYPT_ONLY while rotating).
            let otherKey = Data(SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }).base64EncodedString()
            var sealedOtherwise = stored
            try sealedOtherwise.seal(
                try stored.openSecret(with: environment.cipher), with: CredentialCipher(masterKeyBase64: otherKey))
            try await credentials.upsert(sealedOtherwise)
            let batchIDs = try await environment.produceJobs(batches: 2, targets: 100)
            let (worker, services) = try makeWorker(environment)
            let (held, outcomes) = try await withThrowingTaskGroup(
                of: (String, [Data: Herald_V1_OutcomeBatch])?.self
            ) { tasks in
                tasks.addTask {
                    try await services.run()
                    return nil
                }
                tasks.addTask {
                    let waiting = "herald_sender_batches_waiting_for_credential 2\n"
                    let deadline = ContinuousClock.now + .seconds(60)
                    while !worker.metrics.prometheusText().contains(waiting), ContinuousClock.now < deadline {
                        try await Task.sleep(for: .milliseconds(50))
                    }
                    let held = worker.metrics.prometheusText()
                    // Nothing may be published while the batches wait: watched for three seconds
                    // (the worker tries the credential again several times meanwhile).
                    let early = try await environment.collectOutcomes(batchIDs, timeout: .seconds(3))
                    #expect(early.isEmpty, "no outcome while the credential does not decrypt")
                    try await credentials.upsert(stored)
                    let outcomes = try await environment.collectOutcomes(batchIDs)
                    await services.triggerGracefulShutdown()
                    return (held, outcomes)
                }
                var collected: (String, [Data: Herald_V1_OutcomeBatch]) = ("", [:])
                for try await result in tasks { if let result { collected = result } }
                return collected
            }
            #expect(held.contains("herald_sender_batches_waiting_for_credential 2\n"), "\(held)")
            #expect(Set(outcomes.keys) == batchIDs)
            #expect(outcomes.values.flatMap(\.acceptedDeviceIds).count == 200)
            #expect(outcomes.values.flatMap(\.failures).isEmpty)
            #expect(worker.metrics.prometheusText().contains("herald_sender_batches_waiting_for_credential 0\n"))
            #expect(environment.simulator.ledger.counts.accepted == 200)
        }
    }

    @Test(
        "a second copy of a batch is not sent while the first copy's sending is young; the same record waits while the session that took it lives and is sent once it is gone; an old copy may be taken over"
    )
    func batchCopies() async throws {
        try await withWorkerEnvironment(deliverable: 10, unregistered: 0) { environment in
            let pushes = PushRepository(client: environment.database, logger: environment.logger)
            let push = UUID()
            _ = try await pushes.create(
                NewPush(
                    id: push, appID: environment.appID, audienceJSON: "{}", notificationJSON: "{}",
                    payload: Array(#"{"aps":{}}"#.utf8)),
                announcement: .init(topic: "herald.test.sender.pushes", key: nil, value: []))
            try await environment.database.query(
                """
                INSERT INTO push_batches (push_id, sequence, first_device, last_device, target_count, produced_at)
                VALUES (\(push), 0, 1, 100, 100, now())
                """, logger: environment.logger)
            let gate = StoredBatchGate(pushes: pushes, takeoverAfter: .seconds(60))
            @Sendable func verdict(_ copy: String, gate: StoredBatchGate = gate) async -> BatchVerdict {
                await gate.verdict(pushID: push, appID: environment.appID, sequence: 0, copy: copy)
            }
            // The first copy taken by a sender whose database session then ends (it died).
            try await HeraldDatabase.withClient(
                settings: environment.configuration.postgres, logger: environment.logger
            ) { holderDatabase in
                let holder = StoredBatchGate(
                    pushes: PushRepository(client: holderDatabase, logger: environment.logger),
                    takeoverAfter: .seconds(60))
                #expect(await verdict("herald.jobs/3/17", gate: holder) == .send)
                // Produced again by a resumed fan-out while the first copy is on its way.
                #expect(await verdict("herald.jobs/5/2") == .anotherCopySending)
                // The same record handed to another sender by a rebalance while the first one
                // lives and holds it: wait for its outcome.
                #expect(await verdict("herald.jobs/3/17") == .sameCopyInFlight)
            }
            // Its session is gone: the record is sent again by whoever has it now.
            let gone = await StoreTestSupport.eventually(timeout: .seconds(30)) {
                await verdict("herald.jobs/3/17") == .send
            }
            #expect(gone, "the same record is sent once the session that took it has ended")
            // Taken through this session now, which lives: the record handed out again waits.
            #expect(await verdict("herald.jobs/3/17") == .sameCopyInFlight)
            // A copy whose sending started longer ago than the takeover time gives way.
            let impatient = StoredBatchGate(pushes: pushes, takeoverAfter: .zero)
            try await Task.sleep(for: .milliseconds(20))
            #expect(await verdict("herald.jobs/5/2", gate: impatient) == .send)
            #expect(await verdict("herald.jobs/3/17") == .anotherCopySending)
            // herald-center counts the batch's outcome: it is accounted, and no copy is sent again.
            let counted = try await OutcomeLedger(client: environment.database, logger: environment.logger)
                .applyOutcomes([
                    BatchOutcome(pushID: push, sequence: 0, acceptedDeviceIDs: Array(1...100), failures: [])
                ])
            #expect(counted.batchesCounted == 1)
            #expect(await verdict("herald.jobs/9/9") == .accounted)
            // A record naming this push with another app (whose credential it would be sent with),
            // or a push nobody stored: fail closed.
            #expect(
                await gate.verdict(pushID: push, appID: UUID(), sequence: 0, copy: "herald.jobs/1/1") == .noSuchPush)
            #expect(
                await gate.verdict(pushID: UUID(), appID: environment.appID, sequence: 0, copy: "herald.jobs/1/2")
                    == .noSuchPush)
        }
    }
}

extension SenderWorkerTests {
    @Test(
        "a sender keeps the batch it holds taken: while APNs takes longer to answer than the takeover time, it notes its copy again, and another copy of the batch is refused"
    )
    func heldBatchStaysTaken() async throws {
        // Every answer takes 8 s; the takeover time is 1 s. The worker must note its copy again
        // past the takeover time, while it still waits for APNs; another copy asked about then is
        // refused (without the note it would be sent beside the first).
        var faults = APNsFaults()
        faults.latency = .init(milliseconds: 8000)
        try await withWorkerEnvironment(deliverable: 10, faults: faults) { environment in
            let push = UUID()
            try await environment.store(pushID: push)
            try await environment.database.query(
                """
                INSERT INTO push_batches (push_id, sequence, first_device, last_device, target_count, produced_at)
                VALUES (\(push), 0, 1, 10, 10, now())
                """, logger: environment.logger)
            let batchIDs = try await environment.produceJobs(batches: 1, targets: 10, pushID: push, storePush: false)
            let (_, services) = try makeWorker(environment, batchTakeover: .seconds(1))
            let other = StoredBatchGate(
                pushes: PushRepository(client: environment.database, logger: environment.logger),
                takeoverAfter: .seconds(1))
            let database = environment.database
            let logger = environment.logger
            /// When the batch was last noted as being sent (the database's clock), if it was taken.
            @Sendable func sendingSince() async throws -> Date? {
                let rows = try await database.query(
                    "SELECT sending_since FROM push_batches WHERE push_id = \(push)", logger: logger)
                for try await since in rows.decode(Date?.self) { return since }
                return nil
            }
            let verdict = try await withThrowingTaskGroup(of: BatchVerdict?.self) { tasks in
                tasks.addTask {
                    try await services.run()
                    return nil
                }
                tasks.addTask {
                    var taken: Date?
                    _ = try await eventually(timeout: .seconds(60), poll: .milliseconds(20)) {
                        taken = try await sendingSince()
                        return taken != nil
                    }
                    let first = try #require(taken, "the worker took the batch")
                    let notedAgain = try await eventually(timeout: .seconds(30), poll: .milliseconds(20)) {
                        guard let since = try await sendingSince() else { return false }
                        return since.timeIntervalSince(first) > 1.2
                    }
                    #expect(notedAgain, "the worker noted its copy again after the takeover time")
                    // A re-driven copy arriving now, while the worker still waits for APNs.
                    let verdict = await other.verdict(
                        pushID: push, appID: environment.appID, sequence: 0, copy: "herald.jobs/999/1")
                    _ = try await environment.collectOutcomes(batchIDs)
                    await services.triggerGracefulShutdown()
                    return verdict
                }
                var verdict: BatchVerdict?
                for try await result in tasks { if let result { verdict = result } }
                return verdict
            }
            #expect(verdict == .anotherCopySending)
        }
    }
}

/// Job records a herald-center never writes, each with what its dead letter must say: numbers
/// out of range, an unknown schema version, truncated bytes, ids that do not fit together, and
/// a stored push named with another app's id. None may reach a phone.
private func craftedJobRecords(_ environment: WorkerEnvironment) async throws -> [(record: [UInt8], reason: String)] {
    let pushID = UUID()
    try await environment.store(pushID: pushID)
    func job(sequence: UInt32 = 7, _ change: (inout Herald_V1_JobBatch) -> Void = { _ in }) -> Herald_V1_JobBatch {
        var batch = Herald_V1_JobBatch(
            pushID: pushID.recordBytes, appID: environment.appID.recordBytes, sequence: sequence,
            environment: .sandbox, apnsTopic: environment.bundleID, pushType: .alert, priority: 10, expirationS: 0,
            collapseID: "", payload: Data(#"{"aps":{"alert":"crafted"}}"#.utf8),
            targets: [.init(deviceID: 1, token: deviceToken(1))], createdAtMs: 0)
        change(&batch)
        return batch
    }
    var futureVersion = job()
    futureVersion.schemaVersion = 2
    let whole = try job().encodedRecord()
    return [
        (try job(sequence: 0x8000_0000).encodedRecord(), "batch sequence 2147483648 is out of range"),
        (try futureVersion.serializedBytes(), "schema version 2, this build reads 1"),
        (Array(whole.prefix(whole.count - 5)), "not a valid record"),
        (try job { $0.targets[0].deviceID = 0 }.encodedRecord(), "device id 0 is out of range"),
        (try job { $0.targets[0].deviceID = UInt64(Int64.max) + 1 }.encodedRecord(), "is out of range"),
        (try job { $0.targets[0].token = Data([1, 2, 3]) }.encodedRecord(), "token is 3 bytes"),
        (
            try job { $0.batchID = Herald_V1_JobBatch.batchID(pushID: pushID.recordBytes, sequence: 8) }
                .encodedRecord(),
            "the batch id is not the push id followed by sequence 7"
        ),
        (try job { $0.pushID = Data(count: 15) }.encodedRecord(), "the push id is 15 bytes"),
        (try job { $0.targets = [] }.encodedRecord(), "0 targets"),
        (try job { $0.appID = UUID().recordBytes }.encodedRecord(), "has no push \(pushID)"),
    ]
}

/// A sender worker on the environment's topics, composed as herald-sender composes it
/// (``SenderService``), in a service group to run.
func makeWorker(
    _ environment: WorkerEnvironment, logger: Logger? = nil, maxBatchesInFlight: Int = 4,
    maxOnlineBatchesInFlight: Int = SenderSettings.defaultMaxOnlineBatchesInFlight, batchTakeover: Duration? = nil
) throws -> (SenderWorker, ServiceGroup) {
    let logger = logger ?? environment.logger
    let configuration = environment.configuration
    var endpoints = SenderEndpoints()
    endpoints.sandbox = APNsEndpoint(
        host: "localhost", port: environment.simulator.port,
        trustedCertificates: environment.simulator.identity.certificateChain)
    var settings = configuration.sender
    settings.groupID = environment.group
    settings.transactionalGroupID = "\(environment.group).transactional"
    settings.jobsTopic = environment.jobsTopic
    settings.transactionalJobsTopic = environment.transactionalJobsTopic
    settings.outcomesTopic = environment.outcomesTopic
    settings.maxAttempts = 5
    settings.retryBackoff = Backoff(initial: .milliseconds(5), maximum: .milliseconds(50))
    settings.maxBatchesInFlight = maxBatchesInFlight
    settings.maxOnlineBatchesInFlight = maxOnlineBatchesInFlight
    settings.maxTransactionalBatchesInFlight = 1
    settings.metricsPort = 0
    if let batchTakeover { settings.batchTakeover = batchTakeover }
    let sender = try SenderService(
        settings: settings, configuration: configuration, database: environment.database, cipher: environment.cipher,
        endpoints: endpoints, logger: logger, clientID: "test-sender")
    let worker = sender.worker
    let services = ServiceGroup(configuration: .init(services: [sender], logger: logger))
    return (worker, services)
}
