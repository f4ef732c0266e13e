import Foundation
import HeraldAPNsVocabulary

/// A push to store.
public struct NewPush: Sendable {
    public var id: UUID
    public var appID: UUID
    public var state: PushState
    /// The audience, notification and options as JSON text, as the API accepted them.
    public var audienceJSON: String
    public var notificationJSON: String
    public var optionsJSON: String
    /// The rendered APNs payload (a templated push's default variant with each placeholder's
    /// default: what a push without personalization would send).
    public var payload: [UInt8]
    /// A templated push's ``PayloadTemplate`` in its stored form, rendered per device at fan-out;
    /// nil for every other push.
    public var template: [UInt8]?
    public var pushType: String
    public var priority: Int
    /// Which jobs topic its batches travel (and, for campaigns, the app's quiet hours and caps).
    public var priorityClass: PushPriorityClass
    public var expiresAt: Date?
    /// `apns-collapse-id`: the caller's, or ``defaultCollapseID(pushID:)``. Decided here, when
    /// the push is accepted, and stored; the fan-out, the sender, recalls and replacing pushes
    /// read it and never work one out of their own.
    public var collapseID: String
    public var idempotencyKey: String?
    public var scheduledAt: Date?
    public var throttlePerSecond: Int?
    public var finishWithinSeconds: Int?
    public var recallOf: UUID?
    /// A local time, quiet hours that hold, a time to live per wave (docs/local-time.md); nil
    /// for a push that asked for none of them.
    public var timing: PushTiming?
    /// The W3C `traceparent` the push was accepted under; its trace id is in every log line of
    /// the push, in every process.
    public var traceparent: String?
    /// Who asked for the push, when a request did: its key is stored with the push, and the
    /// push's creation (or, for a recall, the recall) goes into the audit log in the same
    /// statement.
    public var origin: AuditOrigin?
    /// An A/B test (docs/engagement.md#ab-tests): its variants and holdout; nil for a push
    /// without one.
    public var split: PushSplit? = nil
    /// An A/B test's payload of each variant (as `payload`: without the `herald` key), in the
    /// split's order; `payload` is the first's.
    public var variantPayloads: [[UInt8]] = []

    public init(
        id: UUID, appID: UUID, state: PushState = .accepted, audienceJSON: String, notificationJSON: String,
        optionsJSON: String = "{}", payload: [UInt8], template: [UInt8]? = nil, pushType: String = "alert",
        priority: Int = 10, priorityClass: PushPriorityClass = .campaign,
        expiresAt: Date? = nil, collapseID: String? = nil, idempotencyKey: String? = nil,
        scheduledAt: Date? = nil, throttlePerSecond: Int? = nil, finishWithinSeconds: Int? = nil,
        recallOf: UUID? = nil, timing: PushTiming? = nil, traceparent: String? = nil, origin: AuditOrigin? = nil
    ) {
        self.timing = timing
        self.traceparent = traceparent
        self.origin = origin
        self.id = id
        self.appID = appID
        self.state = state
        self.audienceJSON = audienceJSON
        self.notificationJSON = notificationJSON
        self.optionsJSON = optionsJSON
        self.payload = payload
        self.template = template
        self.pushType = pushType
        self.priority = priority
        self.priorityClass = priorityClass
        self.expiresAt = expiresAt
        self.collapseID = collapseID ?? Self.defaultCollapseID(pushID: id)
        self.idempotencyKey = idempotencyKey
        self.scheduledAt = scheduledAt
        self.throttlePerSecond = throttlePerSecond
        self.finishWithinSeconds = finishWithinSeconds
        self.recallOf = recallOf
    }
}

extension NewPush {
    /// The collapse id of a push whose caller set none: its own id in lower case. A batch
    /// delivered twice then replaces rather than stacks on the phone.
    public static func defaultCollapseID(pushID: UUID) -> String { pushID.uuidString.lowercased() }
}

/// A push's priority class (docs/operations.md#priority-classes).
public enum PushPriorityClass: String, Sendable, CaseIterable {
    /// A message one user waits for (a login code, an order update): a list audience sent at
    /// once. Its job batches travel `herald.jobs.transactional`, which senders read with a
    /// consumer and a share of batches in flight of their own, so no campaign's backlog delays it.
    case transactional
    /// Everything else: broadcasts, tags, segments, filters, throttled sends. Travels `herald.jobs`.
    case campaign
}
