import Foundation
import HeraldAPNsVocabulary

/// An app: one iOS app (bundle id) and everything registered for it.
public struct App: Sendable, Equatable {
    public var id: UUID
    public var name: String
    public var bundleID: String
    public var createdAt: Date
    public var updatedAt: Date
    /// The rules for the app's client keys.
    public var clientRules: ClientKeyRules
    /// Quiet hours and a frequency cap for its campaigns; nil: none.
    public var deliveryPolicy: DeliveryPolicy? = nil
}

/// What an app's client keys (the keys its SDK embeds, so anyone may extract them) may do
/// beyond registering a token and changing the device whose token they present.
public struct ClientKeyRules: Sendable, Equatable {
    /// A client key binds an alias only with the app back-end's HMAC of it under the app's
    /// identity secret. On for new apps.
    public var identityVerification: Bool
    /// Client keys may also see registration ids and change or delete devices by them, as
    /// before Herald had these rules. Off for new apps; on for apps that existed before, until an
    /// operator switches it off (docs/security.md).
    public var legacyAccess: Bool
    /// The tags a client key may add or remove; `nil`: any tag. None for new apps.
    public var allowedTags: [String]?
    /// The attributes a client key may set or remove; `nil`: any attribute. None for new apps.
    public var allowedAttributes: [String]?
    /// The old form of alias signature (of the alias alone, valid for ever) is taken besides the
    /// v2 form (bound to the device's token and an expiry). Off for new apps; on for apps that
    /// existed before v2, until their admin switches it off.
    public var aliasSignaturesV1: Bool

    public init(
        identityVerification: Bool = true, legacyAccess: Bool = false, allowedTags: [String]? = [],
        allowedAttributes: [String]? = [], aliasSignaturesV1: Bool = false
    ) {
        self.allowedAttributes = allowedAttributes
        self.identityVerification = identityVerification
        self.legacyAccess = legacyAccess
        self.allowedTags = allowedTags
        self.aliasSignaturesV1 = aliasSignaturesV1
    }
}

/// What an API key may do.
public enum APIKeyKind: String, Sendable, Codable {
    /// Pushes, devices, statistics: for app back-ends and the marketing tool.
    case server
    /// Register a device, and change the device whose token it presents: the key an app's SDK
    /// embeds.
    case client
    /// Manages one app: its settings, keys, credentials and identity secret, and reads its audit
    /// log (what the global admin token does, for that app only).
    case admin
}

/// What a server key may do; a server key without scopes may do all of it.
public enum APIKeyScope: String, Sendable, CaseIterable, Codable {
    case pushesWrite = "pushes:write"
    case pushesRead = "pushes:read"
    case devicesWrite = "devices:write"
    case devicesRead = "devices:read"
    case statsRead = "stats:read"
}

/// An API key as stored: its hash, never the key.
public struct APIKeyRecord: Sendable, Equatable {
    public var id: UUID
    public var appID: UUID
    public var kind: APIKeyKind
    public var keyPrefix: String
    public var name: String
    public var createdAt: Date
    public var lastUsedAt: Date?
    public var revokedAt: Date?
    /// A server key's scopes; `nil`: every scope.
    public var scopes: [APIKeyScope]? = nil
}

/// How Herald authenticates to APNs for an app.
public enum APNsCredentialKind: String, Sendable, Codable {
    /// An ES256 signing key (.p8) with key id and team id.
    case token
    /// A client certificate (PKCS#12 or PEM) for mutual TLS.
    case certificate
}

/// An APNs credential; the secret is sealed (see `CredentialCipher`).
public struct APNsCredentialRecord: Sendable, Equatable {
    public var id: UUID
    public var appID: UUID
    public var environment: APNsEnvironment
    public var kind: APNsCredentialKind
    public var keyID: String?
    public var teamID: String?
    public var sealedSecret: [UInt8]
    /// The id of the master key that sealed the secret (`CredentialCipher.keyID(ofMasterKey:)`);
    /// nil for a secret sealed before secrets carried one.
    public var sealingKeyID: String?
    public var certificateExpiresAt: Date?
    public var updatedAt: Date

    public init(
        id: UUID, appID: UUID, environment: APNsEnvironment, kind: APNsCredentialKind, keyID: String?,
        teamID: String?, sealedSecret: [UInt8], sealingKeyID: String?, certificateExpiresAt: Date? = nil,
        updatedAt: Date = Date()
    ) {
        self.sealingKeyID = sealingKeyID
        self.id = id
        self.appID = appID
        self.environment = environment
        self.kind = kind
        self.keyID = keyID
        self.teamID = teamID
        self.sealedSecret = sealedSecret
        self.certificateExpiresAt = certificateExpiresAt
        self.updatedAt = updatedAt
    }
}

/// Whether a device is targeted.
public enum DeviceStatus: String, Sendable, Codable {
    case active
    /// APNs said the token is dead; it is skipped until the device registers again.
    case invalid
}

/// What an app's SDK sends to register (or refresh) a device.
public struct DeviceRegistration: Sendable {
    public var appID: UUID
    public var token: [UInt8]
    public var environment: APNsEnvironment
    public var topic: String
    public var alias: String?
    public var tags: [String]
    public var locale: String?
    public var timeZone: String?
    /// ISO 3166-1 alpha-2, upper case.
    public var country: String?
    public var appVersion: String?
    public var osVersion: String?
    /// Custom attributes to set (merged into the device's) and to remove, as
    /// ``DeviceAttributes/normalized(_:)`` returns them.
    public var attributes: (set: [String: JSONValue], removed: [String])

    public init(
        appID: UUID, token: [UInt8], environment: APNsEnvironment, topic: String, alias: String? = nil,
        tags: [String] = [], locale: String? = nil, timeZone: String? = nil, country: String? = nil,
        appVersion: String? = nil, osVersion: String? = nil,
        attributes: (set: [String: JSONValue], removed: [String]) = ([:], [])
    ) {
        self.appID = appID
        self.token = token
        self.environment = environment
        self.topic = topic
        self.alias = alias
        self.tags = tags
        self.locale = locale
        self.timeZone = timeZone
        self.country = country
        self.appVersion = appVersion
        self.osVersion = osVersion
        self.attributes = attributes
    }
}

/// A registered device.
public struct Device: Sendable, Equatable {
    /// The registration id.
    public var id: Int64
    public var appID: UUID
    public var token: [UInt8]
    public var environment: APNsEnvironment
    public var topic: String
    public var alias: String?
    public var tags: [String]
    public var locale: String?
    public var timeZone: String?
    public var status: DeviceStatus
    public var registeredAt: Date
    public var updatedAt: Date
    public var invalidatedAt: Date?
    public var invalidReason: String?
    public var country: String? = nil
    public var appVersion: String? = nil
    public var osVersion: String? = nil
    /// The first registration (`registeredAt` is the last: the device's "last seen").
    public var firstRegisteredAt: Date? = nil
    public var attributes: [String: JSONValue] = [:]
}

/// One device of an audience page: what the fan-out puts in a job.
public struct AudienceTarget: Sendable, Equatable {
    public var deviceID: Int64
    public var token: [UInt8]
    public var environment: APNsEnvironment
    public var topic: String

    public init(deviceID: Int64, token: [UInt8], environment: APNsEnvironment, topic: String) {
        self.deviceID = deviceID
        self.token = token
        self.environment = environment
        self.topic = topic
    }
}

/// Where a push is in its life.
public enum PushState: String, Sendable, Codable {
    case scheduled
    case accepted
    case fanningOut = "fanning_out"
    case sending
    case completed
    case canceled
}

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

/// A push's priority class (docs/operations.md#priority-classes).
public enum PushPriorityClass: String, Sendable, CaseIterable {
    /// A message one user waits for (a login code, an order update): a list audience sent at
    /// once. Its job batches travel `herald.jobs.transactional`, which senders read with a
    /// consumer and a share of batches in flight of their own, so no campaign's backlog delays it.
    case transactional
    /// Everything else: broadcasts, tags, segments, filters, throttled sends. Travels `herald.jobs`.
    case campaign
}

extension NewPush {
    /// The collapse id of a push whose caller set none: its own id in lower case. A batch
    /// delivered twice then replaces rather than stacks on the phone.
    public static func defaultCollapseID(pushID: UUID) -> String { pushID.uuidString.lowercased() }
}

/// A stored push with its progress.
public struct Push: Sendable {
    public var definition: NewPush
    public var fanoutCursor: Int64
    public var batchesEmitted: Int
    public var createdAt: Date
    public var completedAt: Date?
    public var canceledAt: Date?
    /// The key that created it (`nil` for pushes from before keys were recorded).
    public var createdByKey: UUID? = nil
    /// The schedule whose occurrence it is, and the occurrence (docs/schedules.md).
    public var scheduleID: UUID? = nil
    public var occurrenceAt: Date? = nil
    /// A push in waves (docs/local-time.md): the wave being, or next to be, fanned out, and how
    /// many were planned (nil until its fan-out first starts, and for every other push).
    public var wave: Int = 0
    public var waves: Int? = nil

    public var id: UUID { definition.id }
    public var state: PushState { definition.state }
}

/// A push's counters. Once it is completed: targeted = accepted + rejected + expired + canceled.
public struct PushCounters: Sendable, Equatable {
    public var targeted: Int64 = 0
    public var accepted: Int64 = 0
    public var rejected: Int64 = 0
    public var expired: Int64 = 0
    public var canceled: Int64 = 0
    public var tokensInvalidated: Int64 = 0
    /// Rejections by APNs reason.
    public var rejectedByReason: [String: Int64] = [:]
    /// Devices the app's delivery policy left out at fan-out (never sent), and why
    /// (``SkipReason``).
    public var skipped: Int64 = 0
    public var skippedByReason: [String: Int64] = [:]

    public init() {}

    /// Every target has a terminal outcome.
    public var isComplete: Bool { targeted == accepted + rejected + expired + canceled + skipped }
}

/// Why the fan-out left a device of a campaign out (docs/delivery-policy.md).
public enum SkipReason: String, Sendable, CaseIterable {
    /// The device already got the app's `max_pushes` campaigns in the cap's window.
    case capped
    /// It was the app's quiet hours in the device's time zone.
    case quietHours = "quiet_hours"
}

/// A device a push did not reach.
public struct FailedDelivery: Sendable, Equatable {
    public enum Status: String, Sendable, Codable {
        case rejected
        case expired
        case canceled
    }

    public var pushID: UUID
    public var deviceID: Int64
    public var status: Status
    public var reason: String?
    public var httpStatus: Int?
    public var attempts: Int

    public init(pushID: UUID, deviceID: Int64, status: Status, reason: String?, httpStatus: Int?, attempts: Int) {
        self.pushID = pushID
        self.deviceID = deviceID
        self.status = status
        self.reason = reason
        self.httpStatus = httpStatus
        self.attempts = attempts
    }
}

/// A Kafka record waiting in the outbox.
public struct OutboxRecord: Sendable, Equatable {
    public var id: Int64
    public var topic: String
    public var key: [UInt8]?
    public var value: [UInt8]
    /// Published as the record's `traceparent` header.
    public var traceparent: String?
}
