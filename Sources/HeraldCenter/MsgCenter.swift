import Foundation
import HeraldCore
import HeraldDomain
import HeraldKafka
import HeraldMessaging
import HeraldRecords
import HeraldStore
import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// The Msg Center's fan-out side, as one `Service`: it claims pushes — when `herald.pushes` says
/// one was created or fell due, and on every sweep (accepted pushes nobody took, scheduled pushes
/// that fell due, fan-outs whose center stopped renewing its claim) — and runs fan-outs in three
/// lanes of slots (``FanoutLane``): up to `maxConcurrentFanouts` broadcasts, tag and segment
/// audiences, `maxExpressFanouts` list audiences and `maxPacedFanouts` throttled pushes and
/// recalls at once. A paused fan-out gives its slot back. The sweep also counts the never-sent remainder of
/// canceled pushes nobody holds, re-drives batches without outcome, and purges old invalid
/// tokens.
///
/// Graceful shutdown stops the fan-outs between pages and gives their claims up, so another
/// center resumes them at once.
public final class MsgCenter: Service, Sendable {
    private let settings: CenterSettings
    private let clock: @Sendable () -> Date
    private let claims: FanoutClaimRepository
    private let progress: FanoutProgressRepository
    private let ledger: OutcomeLedger
    private let gauges: SystemGaugeRepository
    private let devices: DeviceRepository
    private let audience: AudienceRepository
    private let schedules: ScheduleRepository
    private let producer: KafkaProducer
    private let pushEvents: KafkaConsumer?
    private let logger: Logger
    public let metrics: CenterMetrics
    /// The fan-outs running here, and the lane of each.
    private let running = Mutex<[UUID: FanoutLane]>([:])
    /// Claimed pushes and their own lanes, to be run.
    private let claimed: AsyncStream<(Push, FanoutLane)>
    private let claimedSink: AsyncStream<(Push, FanoutLane)>.Continuation

    /// - Parameters:
    ///   - database: the client for everything but audience streams.
    ///   - postgres: where audience streams (`COPY` over libpq, a connection per running fan-out)
    ///     connect; the same server and database as `database`.
    ///   - pushEvents: a consumer on `herald.pushes`; without one the center finds pushes by
    ///     sweeping only.
    ///   - clock: the wall clock its fan-outs plan waves and apply quiet hours by (tests move it on).
    public init(
        settings: CenterSettings, database: PostgresClient, postgres: PostgresSettings, producer: KafkaProducer,
        pushEvents: KafkaConsumer?, metrics: CenterMetrics = CenterMetrics(), logger: Logger,
        clock: @escaping @Sendable () -> Date = Date.init
    ) {
        self.clock = clock
        self.settings = settings
        self.claims = FanoutClaimRepository(client: database, logger: logger)
        self.progress = FanoutProgressRepository(client: database, logger: logger)
        self.ledger = OutcomeLedger(client: database, logger: logger)
        self.gauges = SystemGaugeRepository(client: database, logger: logger)
        self.devices = DeviceRepository(client: database, logger: logger)
        self.audience = AudienceRepository(client: database, postgres: postgres, logger: logger)
        self.schedules = ScheduleRepository(client: database, logger: logger)
        self.producer = producer
        self.pushEvents = pushEvents
        self.metrics = metrics
        self.logger = logger
        (claimed, claimedSink) = AsyncStream.makeStream(of: (Push, FanoutLane).self)
    }

    var lease: Duration { settings.claimLease }

    var runner: FanoutRunner {
        FanoutRunner(
            center: settings.name, claims: claims, progress: progress, ledger: ledger, audience: audience,
            producer: producer,
            pageSize: settings.pageSize, batchSize: settings.batchSize, window: settings.fanoutWindow,
            holdCloseAfter: settings.fanoutHoldCloseAfter,
            topics: JobTopics(settings), lease: lease, metrics: metrics, logger: logger, clock: clock)
    }

    public func run() async throws {
        logger.info(
            "msg center running",
            metadata: [
                "name": "\(settings.name)", "max-fanouts": "\(settings.maxConcurrentFanouts)",
                "max-express-fanouts": "\(settings.maxExpressFanouts)",
                "max-paced-fanouts": "\(settings.maxPacedFanouts)",
            ])
        await producer.prepare(topics: JobTopics(settings).all + [settings.pushesTopic])
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { try await self.sweepUntilShutdown() }
            if let pushEvents {
                group.addTask { try await self.listen(to: pushEvents) }
            }
            group.addTask {
                // Ends the claimed stream on graceful shutdown so the loop below returns.
                try? await gracefulShutdown()
                self.claimedSink.finish()
            }
            let runner = self.runner
            for await (push, lane) in claimed {
                group.addTask {
                    defer {
                        _ = self.running.withLock { $0.removeValue(forKey: push.id) }
                        self.metrics.fanoutsRunning.subtract(1, ordering: .relaxed)
                    }
                    do {
                        // A list audience is a page or two: read through the pool, not a COPY
                        // connection of its own.
                        try await runner.run(push, streaming: lane != .express)
                    } catch is CancellationError {
                        try? await self.claims.releaseClaim(pushID: push.id, by: self.settings.name)
                    } catch {
                        // Another center (or this one, on its next sweep after the lease) takes it over.
                        self.logger.error(
                            "fan-out failed; it will be resumed",
                            metadata: ["push": "\(push.id)", "error": "\(HeraldDatabase.describe(error))"])
                    }
                }
            }
            group.cancelAll()
        }
        // Claims of fan-outs stopped by the shutdown were released above.
        logger.info("msg center stopped")
    }

    /// The lane a push of `lane` takes here: its own, or the bulk lane when its own has no slots.
    func slotLane(_ lane: FanoutLane) -> FanoutLane {
        switch lane {
        case .express: settings.maxExpressFanouts > 0 ? .express : .bulk
        case .paced: settings.maxPacedFanouts > 0 ? .paced : .bulk
        case .bulk: .bulk
        }
    }

    /// Free slots of each lane.
    func freeSlots() -> [FanoutLane: Int] {
        let busy = running.withLock { running in
            Dictionary(running.values.map { ($0, 1) }, uniquingKeysWith: +)
        }
        return [
            .bulk: settings.maxConcurrentFanouts - (busy[.bulk] ?? 0),
            .express: settings.maxExpressFanouts - (busy[.express] ?? 0),
            .paced: settings.maxPacedFanouts - (busy[.paced] ?? 0),
        ]
    }

    /// Claims those of `candidates` that are claimable, up to the free slots of their lanes, and
    /// starts them.
    func claimAndStart(_ candidates: [ClaimCandidate]) async {
        var free = freeSlots()
        var chosen: [UUID: FanoutLane] = [:]
        let ownLanes = Dictionary(candidates.map { ($0.id, $0.lane) }) { first, _ in first }
        let busy = running.withLock { Set($0.keys) }
        for candidate in candidates where !busy.contains(candidate.id) && chosen[candidate.id] == nil {
            let lane = slotLane(candidate.lane)
            guard (free[lane] ?? 0) > 0 else { continue }
            free[lane, default: 0] -= 1
            chosen[candidate.id] = lane
        }
        guard !chosen.isEmpty else { return }
        do {
            for push in try await claims.claim(Array(chosen.keys), by: settings.name, lease: lease) {
                let lane = chosen[push.id] ?? .bulk
                guard running.withLock({ running in running.updateValue(lane, forKey: push.id) == nil }) else {
                    continue
                }
                metrics.fanoutsStarted.add(1, ordering: .relaxed)
                metrics.fanoutsRunning.add(1, ordering: .relaxed)
                logger.info(
                    "push claimed",
                    metadata: ["push": "\(push.id)", "app": "\(push.definition.appID)", "lane": "\(lane.rawValue)"])
                claimedSink.yield((push, ownLanes[push.id] ?? lane))
            }
        } catch {
            logger.warning("cannot claim pushes", metadata: ["error": "\(HeraldDatabase.describe(error))"])
        }
    }

    // MARK: herald.pushes

    private func listen(to consumer: KafkaConsumer) async throws {
        while let messages = try await consumer.nextMessages() {
            for message in messages {
                do {
                    let event = try Herald_V1_PushEvent.decodeRecord(message.value)
                    guard event.pushID.count == 16 else {
                        throw RecordDecodingError(
                            recordType: "Herald_V1_PushEvent",
                            reason: "the push id is \(event.pushID.count) bytes, not 16")
                    }
                    await handle(event)
                } catch {
                    // A lost event only delays a claim (the sweep finds the push), but the record
                    // is kept for an operator; the offset moves once the broker has it.
                    try await producer.deadLetterUntilAcknowledged(
                        message, reason: "\(error)", consumer: "herald-center", logger: logger)
                }
                try? consumer.storeOffset(for: message)
            }
        }
    }

    func handle(_ event: Herald_V1_PushEvent) async {
        let pushID = UUID(data: event.pushID)
        switch event.kind {
        case .created, .scheduleDue:
            do {
                await claimAndStart(try await claims.lanes(of: [pushID]))
            } catch {
                // The sweep finds it.
                logger.warning("cannot look a push up", metadata: ["error": "\(HeraldDatabase.describe(error))"])
            }
        case .canceled, .recalled:
            // A fan-out running here sees the cancel itself; otherwise count what was never sent.
            if !running.withLock({ $0[pushID] != nil }) {
                _ = try? await progress.accountCanceledRemainder(
                    pushID: pushID, by: settings.name, lease: lease, unsentBatches: true)
            }
        default:
            break
        }
    }

    // MARK: Sweeps

    private func sweepUntilShutdown() async throws {
        var lastRedrive = ContinuousClock.now
        var lastPurge = ContinuousClock.now - .seconds(3600)
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            await sweep()
            if ContinuousClock.now - lastRedrive > .seconds(5) {
                lastRedrive = .now
                await redrive()
            }
            if settings.purgeInvalidAfterDays > 0, ContinuousClock.now - lastPurge > .seconds(3600) {
                lastPurge = .now
                await purge()
            }
            await sleepUntilGracefulShutdown(for: settings.sweepInterval)
        }
    }

    /// One sweep: fires due schedule occurrences, claims what is claimable, counts canceled
    /// remainders nobody holds, refreshes the whole system's gauges if this center is their reporter.
    func sweep() async {
        do {
            try await fireSchedules()
        } catch {
            // Schedules failing never keep pushes from being claimed.
            logger.warning(
                "firing due schedules failed; trying again", metadata: ["error": "\(HeraldDatabase.describe(error))"])
        }
        do {
            var limits: [FanoutLane: Int] = [:]
            for (lane, free) in freeSlots() where free > 0 {
                // A lane without slots of its own takes the bulk lane's.
                for own in FanoutLane.allCases where slotLane(own) == lane { limits[own, default: 0] += free }
            }
            if !limits.isEmpty {
                await claimAndStart(try await claims.claimCandidates(lease: lease, limits: limits))
            }
            for pushID in try await progress.canceledUnaccounted(lease: lease, limit: 100) {
                if let remainder = try await progress.accountCanceledRemainder(
                    pushID: pushID, by: settings.name, lease: lease, unsentBatches: true)
                {
                    logger.info(
                        "canceled push: never-sent devices counted",
                        metadata: ["push": "\(pushID)", "devices": "\(remainder)"])
                }
            }
            let system = try await gauges.systemGauges(
                center: settings.name, lease: max(.seconds(15), settings.sweepInterval * 3))
            metrics.systemGauges.withLock { $0 = system }
        } catch {
            metrics.systemGauges.withLock { $0 = nil }
            logger.warning("sweep failed; trying again", metadata: ["error": "\(HeraldDatabase.describe(error))"])
        }
    }

    /// Creates the push of every schedule occurrence that is due (once, however many centers
    /// sweep), or skips one found due past its schedule's late window and says why.
    func fireSchedules() async throws {
        for fired in try await schedules.fireDue(now: Date(), pushesTopic: settings.pushesTopic, limit: 100) {
            let metadata: Logger.Metadata = [
                "schedule": "\(fired.scheduleID)", "occurrence": "\(fired.occurrence)",
            ]
            if let reason = fired.skipReason {
                metrics.scheduleOccurrencesSkipped.add(1, ordering: .relaxed)
                logger.warning(
                    "schedule occurrence skipped", metadata: metadata.merging(["reason": "\(reason)"]) { $1 })
            } else if fired.created, let push = fired.pushID {
                metrics.scheduleOccurrencesPushed.add(1, ordering: .relaxed)
                logger.info("schedule occurrence pushed", metadata: metadata.merging(["push": "\(push)"]) { $1 })
            }
        }
    }

    /// Produces again the batches whose outcome did not come back in time (a record lost in the
    /// broker must not leave a push hanging). Same batch id: counted once whichever copy answers.
    /// A batch already re-driven `maxRedrives` times is ended instead: every target rejected
    /// `Undeliverable`, so its push (and a recall waiting on it) completes.
    func redrive() async {
        do {
            for pushID in try await progress.completeSettled(after: .seconds(5), limit: 100) {
                metrics.pushesCompleted.add(1, ordering: .relaxed)
                logger.warning(
                    "push completed by the sweep: its fan-out had ended and every batch had its outcome",
                    metadata: ["push": "\(pushID)"])
            }
            let stale = try await progress.batchesWithoutOutcome(after: settings.redriveAfter, limit: 200)
            var contexts: [UUID: FanoutContext] = [:]
            for batch in stale {
                if contexts[batch.pushID] == nil, let push = try await claims.push(id: batch.pushID) {
                    contexts[batch.pushID] = try? FanoutContext(
                        push: push, batchSize: settings.batchSize, topics: JobTopics(settings),
                        policy: try await progress.deliveryPolicy(appID: push.definition.appID),
                        waves: push.waves == nil ? [] : try await progress.waves(pushID: push.id))
                }
                guard let context = contexts[batch.pushID] else { continue }
                let cut = try await context.rebuild(batch, from: audience, progress: progress)
                if cut.targets.isEmpty {
                    // Every device left the audience: nothing to send, nothing will answer.
                    _ = try await ledger.applyOutcomes([
                        BatchOutcome(
                            pushID: batch.pushID, sequence: batch.sequence, acceptedDeviceIDs: [], failures: [])
                    ])
                    continue
                }
                if batch.redriven >= settings.maxRedrives {
                    let applied = try await ledger.applyOutcomes([context.undeliverableOutcome(cut)])
                    guard applied.batchesCounted > 0 else { continue }  // its outcome came meanwhile
                    metrics.batchesUndeliverable.add(1, ordering: .relaxed)
                    metrics.notificationsCounted.add(applied.notificationsCounted, ordering: .relaxed)
                    metrics.pushesCompleted.add(applied.pushesCompleted.count, ordering: .relaxed)
                    logger.error(
                        "batch ended Undeliverable: no outcome after every re-drive",
                        metadata: [
                            "push": "\(batch.pushID)", "sequence": "\(batch.sequence)",
                            "re-drives": "\(batch.redriven)", "targets": "\(cut.targets.deviceIDs.count)",
                        ])
                    continue
                }
                _ = try await producer.send(try context.message(cut))
                if try await progress.markRedriven(pushID: batch.pushID, sequence: batch.sequence) {
                    metrics.batchesRedriven.add(1, ordering: .relaxed)
                    logger.warning(
                        "batch without outcome produced again",
                        metadata: ["push": "\(batch.pushID)", "sequence": "\(batch.sequence)"])
                }
            }
        } catch {
            logger.warning(
                "re-drive failed; trying again later", metadata: ["error": "\(HeraldDatabase.describe(error))"])
        }
    }

    private func purge() async {
        do {
            let cutoff = Date().addingTimeInterval(-Double(settings.purgeInvalidAfterDays) * 86_400)
            let purged = try await devices.purgeInvalid(before: cutoff)
            metrics.tokensPurged.add(purged, ordering: .relaxed)
            if purged > 0 {
                logger.info(
                    "invalid tokens purged",
                    metadata: ["devices": "\(purged)", "older-than-days": "\(settings.purgeInvalidAfterDays)"])
            }
        } catch {
            logger.warning("purge failed; trying again later", metadata: ["error": "\(HeraldDatabase.describe(error))"])
        }
    }
}
