import Foundation
import HeraldCore
import HeraldDomain
import HeraldKafka
import HeraldMessaging
import HeraldRecords
import HeraldStore

/// What the center works out once per push before it touches its batches: who the audience is,
/// how to cut it, what every job record carries.
struct FanoutContext: Sendable {
    let push: Push
    private(set) var selection: AudienceSelection
    let cutter: BatchCutter
    let factory: JobBatchFactory
    /// The topic its job batches travel: its priority class's.
    let jobsTopic: String
    /// The push's trace (stored with it by herald-api); every job record carries it on.
    let trace: TraceContext?
    /// The app's quiet hours and frequency cap, for a campaign (not a recall) of an app with a
    /// policy, and the skip of devices whose notifications are off, for a push with
    /// `options.skip_unauthorized`; nil for every other push.
    let policy: DeliveryPolicyFilter?
    /// A push in waves (docs/local-time.md): its plan; the selection is the current wave's.
    private(set) var waves: [PushWave] = []
    /// An A/B test (docs/engagement.md#ab-tests): which variant each device gets, and who is held
    /// out; nil for every other push (a recall never has one).
    private(set) var split: PushSplit?

    /// - Parameters:
    ///   - policy: the app's delivery policy (``FanoutProgressRepository/deliveryPolicy(appID:)``).
    ///   - waves: the push's waves (``FanoutProgressRepository/waves(pushID:)``), when it is sent in waves.
    /// - Throws: ``UnreadableAudience`` when the stored audience is not one.
    init(push: Push, batchSize: Int, topics: JobTopics, policy: DeliveryPolicy? = nil, waves: [PushWave] = []) throws {
        self.push = push
        let audience: PushAudience
        do {
            audience = try PushAudience(json: push.definition.audienceJSON)
        } catch {
            throw UnreadableAudience(pushID: push.id, reason: "\(error)")
        }
        do {
            factory = try JobBatchFactory(push: push)
        } catch {
            throw UnreadableAudience(pushID: push.id, reason: "its stored template cannot be compiled: \(error)")
        }
        var selection = AudienceSelection(
            appID: push.definition.appID, audience: audience, acceptedByPush: push.definition.recallOf)
        if let template = factory.template {
            do {
                selection.personalization = try template.personalization()
            } catch {
                throw UnreadableAudience(pushID: push.id, reason: "\(error)")
            }
        }
        let campaignPolicy =
            (policy.map { !$0.isEmpty } ?? false) && push.definition.priorityClass == .campaign
            && push.definition.recallOf == nil
        let skipsUnauthorized =
            StoredPushOptions(json: push.definition.optionsJSON).skipUnauthorized && push.definition.recallOf == nil
        if campaignPolicy || skipsUnauthorized {
            // A field the page reads, added after the template's own.
            func field(_ wanted: PersonalizationField) -> Int {
                if let index = selection.personalization.firstIndex(of: wanted) { return index }
                selection.personalization.append(wanted)
                return selection.personalization.count - 1
            }
            let applied = (campaignPolicy ? policy : nil) ?? DeliveryPolicy()
            self.policy = DeliveryPolicyFilter(
                policy: applied, timeZoneField: applied.quietHours != nil ? field(.timeZone) : nil,
                authorizationField: skipsUnauthorized ? field(.authorizationStatus) : nil)
        } else {
            self.policy = nil
        }
        self.selection = selection
        split = push.definition.recallOf == nil ? push.definition.split : nil
        cutter = BatchCutter(pushID: push.id, batchSize: batchSize, renderBudget: factory.renderBudget)
        jobsTopic = topics.name(for: push.definition.priorityClass)
        trace = push.definition.traceparent.flatMap { TraceContext(traceparent: $0) }
        self.waves = waves
        self.selection.timeZones = Self.timeZones(of: push, in: waves)
    }

    /// This context for a push sent in `waves` (docs/local-time.md): its selection narrowed to the
    /// current wave's time zones; batches rebuilt and stamped by their own wave.
    func inWaves(_ waves: [PushWave]) -> FanoutContext {
        var context = self
        context.waves = waves
        context.selection.timeZones = Self.timeZones(of: push, in: waves)
        return context
    }

    /// The time zones of `push`'s current wave; nil (no narrowing) for a push not in waves.
    private static func timeZones(of push: Push, in waves: [PushWave]) -> [String]? {
        push.wave < waves.count ? waves[push.wave].timeZones : nil
    }

    /// The selection that rebuilds `batch`: its environment, topic and device range.
    func selection(rebuilding batch: RecordedBatch) -> AudienceSelection {
        var narrowed = selection
        narrowed.audience.environment = batch.environment
        narrowed.topic = batch.topic
        narrowed.throughDevice = batch.lastDevice
        if let wave = waves.wave(ofBatch: batch.sequence) { narrowed.timeZones = wave.timeZones }
        return narrowed
    }

    /// Reads `batch`'s devices again (those still active and still in the audience; under a
    /// delivery policy, only those the push put into batches) and cuts them into the same batch:
    /// same sequence, so the same batch id.
    func rebuild(_ batch: RecordedBatch, from audience: AudienceRepository, progress: FanoutProgressRepository)
        async throws
        -> BatchCutter.Cut
    {
        // Under a policy the range also holds the devices it skipped, and an A/B test's range the
        // other variants' and the held out: read all of it.
        let span = Int(min(batch.lastDevice - batch.firstDevice + 1, 1_000_000))
        var page = try await audience.page(
            selection(rebuilding: batch), after: batch.firstDevice - 1,
            limit: max(batch.targetCount, cutter.batchSize, policy == nil && batch.variant == nil ? 0 : span))
        if policy != nil {
            let targets = try await progress.targets(
                pushID: push.id, from: batch.firstDevice, through: batch.lastDevice)
            page = page.keeping { index in
                let device = page.devices.deviceIDs[index]
                return targets.contains { $0.contains(device) }
            }
        }
        if let split, let variant = batch.variant {
            // The range holds every variant's devices (and the held out, and in winner mode the
            // other phase's): this batch's only.
            let phase = split.phase(ofBatch: batch.sequence)
            page = page.keeping {
                let device = page.devices.deviceIDs[$0]
                return split.phase(pushID: push.id, deviceID: device) == phase
                    && split.variant(pushID: push.id, deviceID: device) == variant
            }
        }
        var record = batch
        record.targetCount = page.count
        return BatchCutter.Cut(record: record, targets: page.devices)
    }

    /// This context with `split` as stored now (winner mode's second phase: the winner picked).
    func with(_ split: PushSplit) -> FanoutContext {
        var context = self
        context.split = split
        return context
    }

    /// What a page of the audience becomes: its batches, and what was left out.
    struct PageCuts {
        var cuts: [BatchCutter.Cut]
        /// Devices left out, by reason (the holdout's, the delivery policy's).
        var skipped: [SkipReason: Int64]
        /// The devices put into batches, under a delivery policy (for the cap and rebuilds).
        var targets: TargetBitmap?
        /// An A/B test's devices the delivery policy left out, by variant.
        var variantsSkipped: [Int: Int64]
    }

    /// Cuts `page` into batches numbered from `firstSequence`: an A/B test's held-out devices
    /// left out first, then those the app's delivery policy leaves out now, and the rest cut per
    /// variant (each batch carries one variant's payload, and its outcome counts toward it).
    func cut(_ page: AudiencePage, firstSequence: Int, now: Date, progress: FanoutProgressRepository) async throws
        -> PageCuts
    {
        guard let split else {
            let sent = try await applyingPolicy(to: page, now: now, progress: progress)
            return PageCuts(
                cuts: cutter.cut(sent.page, firstSequence: firstSequence), skipped: sent.skipped,
                targets: sent.targets, variantsSkipped: [:])
        }
        // Each device's place worked out once: -2 the other phase's (winner mode: the sample first,
        // phase 0, the rest once the winner is picked, phase 1), -1 held out, else its variant.
        let pushID = push.id
        let phase = push.wave
        let places = page.devices.deviceIDs.map { device in
            if split.picksWinner, split.phase(pushID: pushID, deviceID: device) != phase { return -2 }
            return split.variant(pushID: pushID, deviceID: device) ?? -1
        }
        let candidates = page.keeping { places[$0] >= 0 }
        var candidatesPerVariant = [Int](repeating: 0, count: split.variants.count)
        var heldOut: Int64 = 0
        for place in places {
            if place >= 0 { candidatesPerVariant[place] += 1 } else if place == -1 { heldOut += 1 }
        }
        var sent = try await applyingPolicy(to: candidates, now: now, progress: progress)
        if heldOut > 0 { sent.skipped[.holdout, default: 0] += heldOut }
        // The policy's page is a subset of the candidates: their variants by device id.
        let sentVariants =
            sent.page.count == candidates.count
            ? places.filter { $0 >= 0 }
            : sent.page.devices.deviceIDs.map { split.variant(pushID: pushID, deviceID: $0) ?? 0 }
        var result = PageCuts(cuts: [], skipped: sent.skipped, targets: sent.targets, variantsSkipped: [:])
        for index in split.variants.indices {
            let devices = sent.page.keeping { sentVariants[$0] == index }
            var cuts = cutter.cut(devices, firstSequence: firstSequence + result.cuts.count)
            for position in cuts.indices { cuts[position].record.variant = index }
            result.cuts += cuts
            let left = candidatesPerVariant[index] - devices.count
            if left > 0 { result.variantsSkipped[index] = Int64(left) }
        }
        return result
    }

    /// `page` without the devices the app's delivery policy leaves out now (counted by reason),
    /// and the devices kept, for the cap and for rebuilds; `page` as it is without a policy.
    func applyingPolicy(to page: AudiencePage, now: Date, progress: FanoutProgressRepository) async throws
        -> DeliveryPolicyFilter.Result
    {
        guard let policy, let first = page.devices.deviceIDs.first, let last = page.devices.deviceIDs.last else {
            return DeliveryPolicyFilter.Result(page: page, skipped: [:], targets: nil)
        }
        var earlier: [TargetBitmap] = []
        if let since = policy.capWindowStart(now: now) {
            earlier = try await progress.campaignTargets(
                appID: push.definition.appID, excluding: push.id, since: since, from: first, through: last)
        }
        return policy.apply(to: page, now: now, earlier: earlier)
    }

    /// The Kafka record of `cut`, keyed by its batch id so batches spread over the partitions.
    func message(_ cut: BatchCutter.Cut) throws -> KafkaProducerMessage {
        var factory = self.factory
        if let wave = waves.wave(ofBatch: cut.record.sequence) { factory = factory.expiration(startingAt: wave.dueAt) }
        let record = try factory.record(cut)
        return KafkaProducerMessage(
            topic: jobsTopic, key: Array(record.key), value: record.value,
            headers: trace.map { [KafkaHeader(continuing: $0)] } ?? [])
    }

    /// The outcome of a batch that will never be sent: every target canceled.
    func canceledOutcome(_ cut: BatchCutter.Cut) -> BatchOutcome {
        outcome(of: cut, everyTarget: .canceled, reason: "Canceled")
    }

    /// The outcome of a batch that never got one however often it was produced: every target
    /// rejected with Herald's reason `Undeliverable`.
    func undeliverableOutcome(_ cut: BatchCutter.Cut) -> BatchOutcome {
        outcome(of: cut, everyTarget: .rejected, reason: "Undeliverable")
    }

    private func outcome(of cut: BatchCutter.Cut, everyTarget status: FailedDelivery.Status, reason: String)
        -> BatchOutcome
    {
        BatchOutcome(
            pushID: push.id, sequence: cut.record.sequence, acceptedDeviceIDs: [],
            failures: cut.targets.deviceIDs.map {
                BatchOutcome.Failure(
                    deviceID: $0, status: status, reason: reason, httpStatus: 0, unregisteredAt: nil, attempts: 0)
            })
    }
}

/// Where job batches go, by their push's priority class.
struct JobTopics: Sendable {
    /// `herald.jobs` (`HERALD_CENTER_JOBS_TOPIC`).
    var campaign: String
    /// `herald.jobs.transactional` (`HERALD_CENTER_TRANSACTIONAL_JOBS_TOPIC`).
    var transactional: String

    init(campaign: String, transactional: String) {
        self.campaign = campaign
        self.transactional = transactional
    }

    init(_ settings: CenterSettings) {
        self.init(campaign: settings.jobsTopic, transactional: settings.transactionalJobsTopic)
    }

    func name(for priorityClass: PushPriorityClass) -> String {
        switch priorityClass {
        case .transactional: transactional
        case .campaign: campaign
        }
    }

    var all: [String] { [campaign, transactional] }
}

/// A push's stored audience or template cannot be read (written by something other than the
/// Open API).
public struct UnreadableAudience: Error, CustomStringConvertible {
    public var pushID: UUID
    public var reason: String
    public var description: String { "push \(pushID) has an audience Herald cannot read: \(reason)" }
}
