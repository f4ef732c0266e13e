import Foundation
import HeraldCore
import HeraldDomain
import HeraldKafka
import HeraldStore
import HeraldTiming
import Logging

/// Fans out one claimed push: keyset pages of its audience, cut into job batches, recorded in
/// PostgreSQL and then produced to `herald.jobs`, page after page until the audience ends — paced
/// when the push is throttled, held while it is paused, stopped when it is canceled or another
/// center took it over.
///
/// Resuming is the same code: a push claimed again starts at its recorded cursor and first
/// produces the batches its previous center recorded but never got acknowledged.
struct FanoutRunner: Sendable {
    let center: String
    let claims: FanoutClaimRepository
    let progress: FanoutProgressRepository
    let ledger: OutcomeLedger
    let audience: AudienceRepository
    let producer: KafkaProducer
    let pageSize: Int
    let batchSize: Int
    /// Notifications an unthrottled fan-out may have without an outcome before it holds
    /// (``CenterSettings/fanoutWindow``; 0: no bound).
    let window: Int
    /// A hold this long closes the audience stream (``CenterSettings/fanoutHoldCloseAfter``).
    let holdCloseAfter: Duration
    let topics: JobTopics
    let lease: Duration
    let metrics: CenterMetrics
    let logger: Logger
    /// The wall clock waves are planned and quiet hours applied by.
    var clock: @Sendable () -> Date = Date.init

    /// Fans out `push` (claimed by this center) as far as it goes.
    /// - Parameter streaming: read an unthrottled audience as one COPY stream on a connection of
    ///   its own (false: keyset pages through the pool, for list audiences of a page or two).
    func run(_ push: Push, streaming: Bool = true) async throws {
        var logger = logger
        logger[metadataKey: "push"] = "\(push.id)"
        if let trace = push.definition.traceparent.flatMap({ TraceContext(traceparent: $0) }) {
            logger[metadataKey: "trace"] = "\(trace.traceID)"
        }
        let policy = try await progress.deliveryPolicy(appID: push.definition.appID)
        let whole: FanoutContext
        do {
            whole = try FanoutContext(push: push, batchSize: batchSize, topics: topics, policy: policy)
        } catch {
            // Nothing can be sent: end the fan-out with nothing targeted rather than retry forever.
            logger.error("fan-out impossible", metadata: ["error": "\(error)"])
            _ = try await progress.finishFanout(pushID: push.id, by: center)
            return
        }
        guard var prepared = try await inWaves(whole, policy: policy, logger: logger) else { return }
        if let split = prepared.split, split.picksWinner, push.wave == 1 {
            // Winner mode's second phase: the winner picked now (unless the operator did).
            guard let picked = try await progress.startSecondPhase(pushID: push.id, by: center) else {
                logger.warning("another center took this fan-out over; stopping")
                return
            }
            prepared = prepared.with(picked)
            logger.info(
                "A/B test: the winner goes to the rest of the audience",
                metadata: ["winner": "\(picked.winner.map { picked.variants[$0].name } ?? "-")"])
        }
        let context = prepared
        var pacer = try await makePacer(context, after: push.fanoutCursor)
        let resumed = try await progress.unproducedBatches(pushID: push.id)
        if !resumed.isEmpty {
            logger.info(
                "resuming a fan-out: producing the batches its previous center left unacknowledged",
                metadata: ["batches": "\(resumed.count)", "cursor": "\(push.fanoutCursor)"])
            var cuts: [BatchCutter.Cut] = []
            for batch in resumed { cuts.append(try await context.rebuild(batch, from: audience, progress: progress)) }
            if pacer == nil {
                try await produce(cuts, context: context, logger: logger)
            } else {
                // A throttled push keeps its rate across a pause or a takeover.
                guard try await producePaced(cuts, context: context, pacer: &pacer, logger: logger) else { return }
            }
        }

        if let original = push.definition.recallOf {
            // A recall goes to the devices that accepted the original: wait until every
            // outcome of the (canceled) original is counted.
            guard try await waitForCompletion(of: original, recall: push.id, logger: logger) else { return }
        }
        var steps = FanoutSteps(
            cursor: push.fanoutCursor, nextSequence: push.batchesEmitted, paced: pacer != nil, wave: push.wave,
            waves: context.waves.count, windowed: window > 0)
        logger.info(
            "fan-out started",
            metadata: [
                "cursor": "\(steps.cursor)", "batches-before": "\(steps.nextSequence)",
                "rate": "\(pacer.map { "\(Int($0.rate))/s" } ?? "unthrottled")",
            ])

        // Unthrottled, the audience comes as one COPY stream read ahead on a thread of its own
        // while earlier pages are produced; a throttled push reads a keyset page when it needs
        // one instead, so no statement stays open for the hours a slow push may take, and a list
        // audience (not `streaming`) reads its page or two through the pool rather than opening
        // a connection. A pause closes the stream; it opens again at the cursor.
        var stream: AudienceStream.AsyncIterator?
        var page = AudiencePage()
        var cuts: [BatchCutter.Cut] = []
        try await withThrowingTaskGroup(of: Void.self) { producing in
            var action = steps.start()
            while true {
                switch action {
                case .checkControl:
                    action = steps.controlChecked(
                        try await waitUntilRunnable(
                            push.id, pacer: &pacer, logger: logger, releasingWhenPaused: true
                        ) { stream = nil })
                case .holdForOutcomes:
                    action = steps.controlChecked(
                        try await holdForOutcomes(push.id, logger: logger) { stream = nil })
                case .readPage(let cursor):
                    let started = ContinuousClock.now
                    defer { metrics.addFanoutTime(.read, since: started) }
                    if pacer == nil, streaming {
                        if stream == nil {
                            stream = audience.stream(context.selection, after: cursor, pageSize: pageSize)
                                .makeAsyncIterator()
                        }
                        page = try await stream?.next() ?? AudiencePage()
                        // A stream also ends when this task is canceled (a shutdown): that is no
                        // end of the audience.
                        try Task.checkCancellation()
                    } else {
                        page = try await audience.page(context.selection, after: cursor, limit: pageSize)
                    }
                    action = steps.pageRead(lastDeviceID: page.lastDeviceID)
                case .recordPage(let firstSequence, let cursor):
                    // The devices an A/B test holds out and the app's delivery policy leaves out
                    // are counted, not cut.
                    var started = ContinuousClock.now
                    let page = try await context.cut(
                        page, firstSequence: firstSequence, now: clock(), progress: progress)
                    cuts = page.cuts
                    metrics.addFanoutTime(.cut, since: started)
                    started = .now
                    defer { metrics.addFanoutTime(.record, since: started) }
                    let recording = try await progress.recordPage(
                        pushID: push.id, by: center, cursor: cursor, batches: cuts.map(\.record),
                        skipped: page.skipped, targets: page.targets, variantsSkipped: page.variantsSkipped)
                    action = steps.pageRecorded(recording, batches: cuts.count)
                case .produce(let afterOneFinishes):
                    if afterOneFinishes {
                        let started = ContinuousClock.now
                        try await producing.next()
                        metrics.addFanoutTime(.slot, since: started)
                    }
                    producing.addTask { [logger, cuts] in try await produce(cuts, context: context, logger: logger) }
                    action = steps.producing()
                case .producePaced:
                    action = steps.pacedProduced(
                        continuing: try await producePaced(cuts, context: context, pacer: &pacer, logger: logger))
                case .end(let ending):
                    stream = nil
                    try await end(ending, steps: steps, context: context, producing: &producing, logger: logger)
                    return
                }
            }
        }
    }

    /// What is left to do when the page loop ends (``FanoutSteps/Ending``).
    private func end(
        _ ending: FanoutSteps.Ending, steps: FanoutSteps, context: FanoutContext,
        producing: inout ThrowingTaskGroup<Void, any Error>, logger: Logger
    ) async throws {
        let pushID = context.push.id
        switch ending {
        case .finish:
            try await producing.waitForAll()
            if let split = context.split, split.picksWinner, context.push.wave == 0 {
                // Winner mode: the sample is sent; the rest waits for the winner.
                let dueAt = clock().addingTimeInterval(TimeInterval(split.waitSeconds ?? 0))
                if try await progress.awaitWave(1, dueAt: dueAt, pushID: pushID, by: center) {
                    logger.info(
                        "A/B test: the sample is sent; the winner is picked, and sent to the rest, at its time",
                        metadata: ["batches": "\(steps.nextSequence)", "winner-at": "\(dueAt)"])
                }
                return
            }
            if try await progress.finishFanout(pushID: pushID, by: center) {
                metrics.fanoutsFinished.add(1, ordering: .relaxed)
                logger.info("fan-out finished", metadata: ["batches": "\(steps.nextSequence)"])
            }
        case .awaitWave(let index):
            try await producing.waitForAll()
            let next = context.waves[index]
            if try await progress.awaitWave(next.index, dueAt: next.dueAt, pushID: pushID, by: center) {
                logger.info(
                    "wave fanned out; the next one waits for its time",
                    metadata: [
                        "wave": "\(index)/\(context.waves.count)", "batches": "\(steps.nextSequence)",
                        "next-at": "\(next.dueAt)",
                    ])
            }
        case .paused:
            // Between pages: give the slot back; a center claims it again once resumed (this one
            // or another), at its cursor.
            try await producing.waitForAll()
            try await giveSlotBack(pushID, logger: logger)
        case .canceled:
            try await countCanceled(pushID, logger: logger)
        case .claimLost:
            logger.warning("another center took this fan-out over; stopping")
        case .stopped:
            break
        }
    }

    /// `context` narrowed to the wave due now, for a push sent in waves (docs/local-time.md) —
    /// planned first if this is its first claim; nil when the fan-out stops here: its (next) wave
    /// is not due yet (the push is `scheduled` again until it is), or it lost its claim.
    /// `context` as it is for every other push.
    private func inWaves(_ context: FanoutContext, policy: DeliveryPolicy?, logger: Logger) async throws
        -> FanoutContext?
    {
        let push = context.push
        let definition = push.definition
        guard let timing = definition.timing, definition.recallOf == nil,
            timing.sendsInWaves(appHasQuietHours: context.policy != nil && policy?.quietHours != nil)
        else { return context }
        var waves = try await progress.waves(pushID: push.id)
        if waves.isEmpty {
            let groups = try await audience.timeZoneGroups(context.selection)
            let plan = WavePlanner(timing: timing, policy: policy).plan(groups: groups, start: clock())
            // An empty audience has no wave: the fan-out ends with nothing targeted.
            guard !plan.isEmpty else { return context }
            guard let stored = try await progress.planWaves(pushID: push.id, by: center, waves: plan) else {
                logger.warning("another center took this fan-out over; stopping")
                return nil
            }
            waves = stored
            logger.info(
                "fan-out planned in waves",
                metadata: [
                    "waves": "\(waves.count)", "devices": "\(waves.reduce(0) { $0 + $1.devices })",
                    "first-at": "\(waves.first?.dueAt.description ?? "")",
                    "last-at": "\(waves.last?.dueAt.description ?? "")",
                ])
        }
        guard push.wave < waves.count else { return context }
        let wave = waves[push.wave]
        if wave.dueAt.timeIntervalSince(clock()) > 1 {
            try await progress.awaitWave(wave.index, dueAt: wave.dueAt, pushID: push.id, by: center)
            logger.info(
                "fan-out waits for its wave's time",
                metadata: ["wave": "\(wave.index + 1)/\(waves.count)", "at": "\(wave.dueAt)"])
            return nil
        }
        if wave.firstSequence == nil {
            try await progress.startWave(pushID: push.id, wave: wave.index, firstSequence: push.batchesEmitted)
            waves[wave.index].firstSequence = push.batchesEmitted
        }
        logger.info(
            "wave started",
            metadata: [
                "wave": "\(wave.index + 1)/\(waves.count)", "time-zones": "\(wave.timeZones.count)",
                "devices": "\(wave.devices)",
            ])
        return context.inWaves(waves)
    }

    /// Produces `cuts` (recorded before) one at a time at the pacer's rate. Returns false when the
    /// fan-out stops here: canceled (the batches not sent counted as canceled, so the push still
    /// completes), taken over (the new holder produces what was recorded but not sent), or paused
    /// (its claim and slot given back; what was recorded but not sent is produced, paced, when a
    /// center claims it again).
    private func producePaced(
        _ cuts: [BatchCutter.Cut], context: FanoutContext, pacer: inout EmissionPacer?, logger: Logger
    ) async throws -> Bool {
        for (index, cut) in cuts.enumerated() {
            switch try await waitUntilRunnable(
                context.push.id, pacer: &pacer, logger: logger, releasingWhenPaused: true, pausing: {})
            {
            case .proceed:
                try await produce([cut], context: context, logger: logger)
                pacer?.emit(cut.targets.count)
            case .canceled:
                _ = try await ledger.applyOutcomes(cuts[index...].map(context.canceledOutcome))
                return false
            case .paused:
                try await giveSlotBack(context.push.id, logger: logger)
                return false
            case .lost:
                return false
            }
        }
        return true
    }

    /// A paused fan-out stops here: its claim (and this center's slot) is given up; a center
    /// claims it again once it is resumed.
    private func giveSlotBack(_ pushID: UUID, logger: Logger) async throws {
        try await claims.releaseClaim(pushID: pushID, by: center)
        logger.info("fan-out paused: its slot is free until the push is resumed")
    }

    /// Produces `cuts` (recorded before) and notes them acknowledged; a broker outage holds the
    /// fan-out (its claim renewed) until the broker takes them.
    private func produce(_ cuts: [BatchCutter.Cut], context: FanoutContext, logger: Logger) async throws {
        guard !cuts.isEmpty else { return }
        var started = ContinuousClock.now
        let messages = try cuts.map(context.message)
        metrics.addFanoutTime(.encode, since: started)
        started = .now
        var waits = Backoff.outage.delays()
        while true {
            do {
                _ = try await producer.send(messages)
                break
            } catch {
                try Task.checkCancellation()
                let delay = waits.next()
                logger.warning(
                    "cannot produce job batches; retrying", metadata: ["error": "\(error)", "retry-in": "\(delay)"])
                _ = try? await claims.renewClaim(pushID: context.push.id, by: center)
                try await Task.sleep(for: delay)
            }
        }
        metrics.addFanoutTime(.broker, since: started)
        started = .now
        try await progress.markProduced(pushID: context.push.id, sequences: cuts.map(\.record.sequence))
        metrics.addFanoutTime(.mark, since: started)
        metrics.batchesProduced.add(cuts.count, ordering: .relaxed)
        metrics.devicesEmitted.add(cuts.reduce(0) { $0 + $1.targets.count }, ordering: .relaxed)
    }

    /// A pacer for a throttled push (a rate, or "finish within" spread over what is left), with
    /// its plan stored for the ETA; nil when the push is not throttled.
    private func makePacer(_ context: FanoutContext, after cursor: Int64) async throws -> EmissionPacer? {
        let definition = context.push.definition
        guard definition.throttlePerSecond != nil || definition.finishWithinSeconds != nil else { return nil }
        let remaining = try await audience.count(context.selection, after: cursor)
        let rate: Double
        if let perSecond = definition.throttlePerSecond {
            rate = Double(perSecond)
        } else {
            rate = max(1, Double(remaining) / Double(definition.finishWithinSeconds ?? 1))
        }
        let pacer = EmissionPacer(rate: rate, start: .now)
        try await progress.setPlan(
            pushID: context.push.id, audienceSize: remaining,
            etaAt: Date().addingTimeInterval(pacer.secondsToEmit(remaining)))
        return pacer
    }

    /// Before each page (and each paced batch): stops when the push was canceled (counting what
    /// it never sent) or taken over; holds while it is paused (or, `releasingWhenPaused`, returns
    /// `.paused` so the caller gives its slot back); sleeps the pacer's delay. Renews the claim
    /// while it waits.
    private func waitUntilRunnable(
        _ pushID: UUID, pacer: inout EmissionPacer?, logger: Logger, releasingWhenPaused: Bool = false,
        pausing: () -> Void
    ) async throws -> FanoutSteps.Control {
        var wasPaused = false
        var lastRenewal = ContinuousClock.now
        while true {
            try Task.checkCancellation()
            guard let control = try await claims.control(pushID: pushID) else { return .lost }
            if control.state == .canceled {
                try await countCanceled(pushID, logger: logger)
                return .canceled
            }
            guard control.state == .fanningOut, control.claimedBy == center else {
                logger.warning("another center took this fan-out over; stopping")
                return .lost
            }
            if control.paused {
                if !wasPaused {
                    pausing()
                    if releasingWhenPaused { return .paused }
                    logger.info("fan-out paused")
                }
                wasPaused = true
                _ = try await claims.renewClaim(pushID: pushID, by: center)
                try await Task.sleep(for: .milliseconds(200))
                continue
            }
            if wasPaused {
                logger.info("fan-out resumed")
                pacer?.restart(now: .now)
            }
            guard let delay = pacer?.delay(now: .now), delay > .zero else { return .proceed }
            // Sleep in short steps so cancel and pause take effect quickly; renew the claim
            // while waiting long.
            if delay > .milliseconds(200), ContinuousClock.now - lastRenewal > lease / 4 {
                _ = try await claims.renewClaim(pushID: pushID, by: center)
                lastRenewal = .now
            }
            try await Task.sleep(for: min(delay, .milliseconds(200)))
            if delay <= .milliseconds(200) { return .proceed }
        }
    }

    /// Before an unthrottled fan-out's next page: holds while the push has `window` or more
    /// notifications in batches without an outcome, so the fan-out runs at most a window (and a
    /// page) ahead of the senders — a broadcast to ten million devices does not put all of them
    /// on the broker at once, where the development broker keeps only about 5 MiB a partition
    /// and drops the oldest records past it (docs/operations.md). Looks the control up while it
    /// holds (a cancel or a pause ends the hold as it ends a page) and renews the claim; a hold
    /// longer than `holdCloseAfter` closes the audience stream (`closeStream`), which opens again
    /// at the cursor. With no outcome coming back at all (every sender down), the hold lasts
    /// until the re-drives end the batches in flight, and the fan-out keeps its slot meanwhile.
    private func holdForOutcomes(_ pushID: UUID, logger: Logger, closeStream: () -> Void) async throws
        -> FanoutSteps.Control
    {
        let window = Int64(window)
        var unanswered = try await progress.targetsWithoutOutcome(pushID: pushID)
        guard unanswered >= window else { return .proceed }
        metrics.fanoutHolds.add(1, ordering: .relaxed)
        logger.debug(
            "fan-out holds for outcomes", metadata: ["without-outcome": "\(unanswered)", "window": "\(window)"])
        let started = ContinuousClock.now
        var lastRenewal = started
        var streamOpen = true
        var noPacer: EmissionPacer?
        while unanswered >= window {
            let control = try await waitUntilRunnable(
                pushID, pacer: &noPacer, logger: logger, releasingWhenPaused: true, pausing: closeStream)
            guard control == .proceed else { return control }
            if streamOpen, ContinuousClock.now - started >= holdCloseAfter {
                // No COPY statement stays open while the senders are slow or away.
                closeStream()
                streamOpen = false
                logger.info(
                    "fan-out holds: its window of notifications without an outcome is full",
                    metadata: ["without-outcome": "\(unanswered)", "window": "\(window)"])
            }
            if ContinuousClock.now - lastRenewal > lease / 4 {
                _ = try await claims.renewClaim(pushID: pushID, by: center)
                lastRenewal = .now
            }
            try await Task.sleep(for: .milliseconds(200))
            unanswered = try await progress.targetsWithoutOutcome(pushID: pushID)
        }
        return .proceed
    }

    /// Waits (renewing the claim) until push `original` is completed. Returns false when the
    /// recall itself was canceled or taken over meanwhile.
    private func waitForCompletion(of original: UUID, recall: UUID, logger: Logger) async throws -> Bool {
        var pacer: EmissionPacer?
        var logged = false
        while try await !progress.isCompleted(pushID: original) {
            if !logged {
                logger.info("recall waits for the original push's last outcomes", metadata: ["original": "\(original)"])
                logged = true
            }
            guard try await waitUntilRunnable(recall, pacer: &pacer, logger: logger, pausing: {}) == .proceed else {
                return false
            }
            _ = try await claims.renewClaim(pushID: recall, by: center)
            try await Task.sleep(for: .milliseconds(250))
        }
        return true
    }

    private func countCanceled(_ pushID: UUID, logger: Logger) async throws {
        if let remainder = try await progress.accountCanceledRemainder(pushID: pushID, by: center, lease: lease) {
            logger.info(
                "push canceled during fan-out; never-sent devices counted as canceled",
                metadata: ["devices": "\(remainder)"])
        }
    }
}
