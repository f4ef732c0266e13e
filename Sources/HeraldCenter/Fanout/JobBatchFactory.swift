import Foundation
import HeraldAPNsVocabulary
import HeraldDomain
import HeraldRecords
import HeraldStore

/// Turns a push and the targets of one cut batch into the `herald.jobs` record senders read.
/// Everything but the targets is worked out once per push.
///
/// A templated push's payloads are rendered here, per device, from the values its audience
/// stream read with each device (docs/templates.md): the record carries each distinct payload
/// once and every target the index of its own. A render over APNs' limit is never sent: its
/// targets point at an empty payload, which the sender ends rejected (`RenderedPayloadTooLarge`).
///
/// Every payload, plain or rendered, carries the push's id under the `herald` key
/// (``HeraldPayloadKey``), added here; a recall's payload has it already. A payload the key would
/// take past APNs' limit (accepted before the Open API reserved its bytes) goes without it.
struct JobBatchFactory: Sendable {
    let pushID: Data
    let appID: Data
    let pushType: APNsPushType
    let priority: UInt32
    /// `apns-expiration` in Unix seconds (0: none): the push's, or — a push in waves with a time
    /// to live — its wave's start plus it (``expiration(startingAt:)``).
    var expiration: Int64
    let collapseID: String
    let payload: Data
    /// The push's id, stamped into every payload (nil: a recall, whose payload carries it already).
    let stamp: HeraldPayloadKey.Stamp?
    /// A templated push's compiled template.
    let template: PayloadTemplate?
    /// A push in waves: each wave's notifications live this many seconds from its start.
    let timeToLive: Int?
    /// The road its notifications take (`options.channel`).
    let channel: Herald_V1_JobBatch.Channel
    /// A recall's: the recalled push's id (connected devices get a revoke frame naming it).
    let revokes: Data
    /// An A/B test's payload of each variant, stamped; a batch cut for a variant carries its own.
    let variantPayloads: [Data]

    /// A record's rendered payloads stay under this many bytes in all (Kafka's default largest
    /// message is 1 MB): see ``renderBudget``.
    static let renderedBytesPerRecord = 800_000

    /// - Throws: when the push's stored template cannot be compiled (the Open API compiled it
    ///   before storing it, so only a row written by something else).
    init(push: Push) throws {
        let definition = push.definition
        pushID = push.id.recordBytes
        appID = definition.appID.recordBytes
        pushType = APNsPushType(rawValue: definition.pushType) ?? .alert
        priority = UInt32(definition.priority)
        expiration = definition.expiresAt.map { Int64($0.timeIntervalSince1970.rounded(.up)) } ?? 0
        timeToLive = definition.timing?.timeToLiveSeconds
        collapseID = definition.collapseID
        stamp = definition.recallOf == nil ? HeraldPayloadKey.Stamp(pushID: push.id) : nil
        revokes = definition.recallOf?.recordBytes ?? Data()
        let limit = pushType.maximumPayloadBytes
        payload = Data(stamp.map { Self.stamped(definition.payload, with: $0, limit: limit) } ?? definition.payload)
        template = try definition.template.map { try PayloadTemplate(stored: $0) }
        let stamp = stamp
        variantPayloads = definition.variantPayloads.map { variant in
            Data(stamp.map { JobBatchFactory.stamped(variant, with: $0, limit: limit) } ?? variant)
        }
        channel =
            switch PushChannel(optionsJSON: definition.optionsJSON) {
            case .auto: .auto
            case .apns: .apns
            case .online: .online
            }
    }

    /// The factory of a wave that started at `start`: with the push's time to live (when it gave
    /// one rather than an absolute expiration) counted from it.
    func expiration(startingAt start: Date) -> JobBatchFactory {
        guard let timeToLive else { return self }
        var factory = self
        factory.expiration = Int64((start.timeIntervalSince1970 + Double(timeToLive)).rounded(.up))
        return factory
    }

    /// A templated push's batches hold up to `batchSize` devices, but close before the longest
    /// their renders could be passes ``renderedBytesPerRecord`` (nil for any other push): a bound
    /// per device from its values' lengths (``PayloadTemplate/maximumRenderedCount(valueLength:)``
    /// with the `herald` key, at most APNs' limit, as a longer render is sent empty).
    var renderBudget: BatchCutter.RenderBudget? {
        guard let template else { return nil }
        return BatchCutter.RenderBudget(
            bytes: Self.renderedBytesPerRecord, template: template, firstName: template.isLocalized ? 1 : 0,
            stamp: stamp == nil ? 0 : HeraldPayloadKey.reservedBytes, limit: pushType.maximumPayloadBytes)
    }

    /// The encoded `herald.jobs` record of `cut`, stamped `now`, and its key (the batch id).
    func record(_ cut: BatchCutter.Cut, now: Date = Date()) throws -> (key: Data, value: [UInt8]) {
        var batch = Herald_V1_JobBatch(
            pushID: pushID, appID: appID, sequence: UInt32(cut.record.sequence),
            environment: cut.record.environment == .sandbox ? .sandbox : .production,
            apnsTopic: pushType.topic(forBundleID: cut.record.topic), pushType: Self.recordPushType(pushType),
            priority: priority,
            expirationS: expiration, collapseID: collapseID, payload: payload, targets: [],
            createdAtMs: Int64(now.timeIntervalSince1970 * 1000))
        batch.channel = channel
        batch.revokesPushID = revokes
        if let variant = cut.record.variant, variantPayloads.indices.contains(variant) {
            batch.payload = variantPayloads[variant]
        }
        let targets = cut.targets
        var payloadIndexes: [UInt32] = []
        if let template {
            (batch.payloads, payloadIndexes) = rendered(targets, with: template)
            batch.payload = Data()
        }
        return (
            batch.batchID,
            try batch.encodedRecord(targets: targets, payloadIndexes: payloadIndexes)
        )
    }

    /// Each target's payload rendered from its values (``PayloadTemplate/personalization()``'s
    /// order: the locale first when the template has variants): the distinct payloads, and each
    /// target's index among them. A render over the limit becomes the empty payload.
    func rendered(_ targets: DeviceTokens, with template: PayloadTemplate) -> (payloads: [Data], indexes: [UInt32]) {
        let limit = pushType.maximumPayloadBytes
        let firstName = template.isLocalized ? 1 : 0
        var payloads = RenderedPayloads(targets: targets.count)
        var locales = LocaleVariants(template: template)
        for device in 0..<targets.count {
            let variant = template.isLocalized ? locales.variant(forLocale: targets.value(0, at: device)) : 0
            var bytes = template.render(variant: variant) { targets.value(firstName + $0, at: device) }
            if let stamp, bytes.count + HeraldPayloadKey.reservedBytes <= limit { stamp.apply(to: &bytes) }
            if bytes.count > limit { bytes = [] }
            payloads.append(bytes)
        }
        // A batch's renders fit its record (its cut bounded them), unless it was rebuilt after its
        // devices' values grew (a re-drive, a resumed fan-out): the renders past the budget are
        // sent empty then, and their devices end rejected RenderedPayloadTooLarge.
        var total = 0
        let distinct = payloads.distinct.map { payload in
            guard total + payload.count <= Self.renderedBytesPerRecord else { return Data() }
            total += payload.count
            return Data(payload)
        }
        return (distinct, payloads.indexes)
    }

    /// `payload` with the push id under the `herald` key — unless it would then pass `limit`, or
    /// already has a top-level `herald`: a push accepted before the Open API kept the key's bytes
    /// free and refused the key in custom data (a schedule's stored blueprint, a push scheduled
    /// then) goes as it was accepted rather than rejected.
    static func stamped(_ payload: [UInt8], with stamp: HeraldPayloadKey.Stamp, limit: Int) -> [UInt8] {
        var stamped = payload
        stamp.apply(to: &stamped)
        guard stamped.count <= limit else { return payload }
        let object = try? JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any]
        return object?[HeraldPayloadKey.name] == nil ? stamped : payload
    }

    static func recordPushType(_ type: APNsPushType) -> Herald_V1_JobBatch.PushType {
        switch type {
        case .alert: .alert
        case .background: .background
        case .voip: .voip
        case .complication: .complication
        case .fileprovider: .fileprovider
        case .mdm: .mdm
        case .liveactivity: .liveactivity
        case .location: .location
        case .pushtotalk: .pushtotalk
        case .widgets: .widgets
        case .controls: .controls
        }
    }
}

/// The variant of each locale a batch has met. A batch holds few distinct locales, and working a
/// locale's variant out builds a string and looks it up once or twice: 16 % of the center's CPU in
/// a templated fan-out, done once per device (docs/benchmarks.md).
private struct LocaleVariants {
    let template: PayloadTemplate
    /// At most 16 locales remembered, compared a byte at a time (they are a few bytes long).
    private var known: [(locale: [UInt8], variant: Int)] = []

    init(template: PayloadTemplate) { self.template = template }

    mutating func variant(forLocale locale: ArraySlice<UInt8>) -> Int {
        for entry in known where entry.locale.count == locale.count && entry.locale.elementsEqual(locale) {
            return entry.variant
        }
        let variant = template.variant(forLocale: locale)
        if known.count < 16 { known.append((Array(locale), variant)) }
        return variant
    }
}
