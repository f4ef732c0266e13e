import Foundation
import HeraldAPNsVocabulary

/// A batch of one push as herald-center cut it: `targetCount` devices of one environment and
/// topic, with ids from `firstDevice` through `lastDevice`. With the push's audience these rebuild
/// the batch when it has to be produced again.
public struct RecordedBatch: Sendable, Equatable {
    public var pushID: UUID
    public var sequence: Int
    public var firstDevice: Int64
    public var lastDevice: Int64
    public var targetCount: Int
    public var environment: APNsEnvironment
    /// The devices' topic (the bundle id they registered with).
    public var topic: String
    /// How many times it was produced again for want of an outcome.
    public var redriven: Int

    public init(
        pushID: UUID, sequence: Int, firstDevice: Int64, lastDevice: Int64, targetCount: Int,
        environment: APNsEnvironment, topic: String, redriven: Int = 0
    ) {
        self.redriven = redriven
        self.pushID = pushID
        self.sequence = sequence
        self.firstDevice = firstDevice
        self.lastDevice = lastDevice
        self.targetCount = targetCount
        self.environment = environment
        self.topic = topic
    }
}

/// What an operator or the API has done to a push while it fans out.
public struct PushControl: Sendable, Equatable {
    public var state: PushState
    public var paused: Bool
    /// The center holding the fan-out, if any.
    public var claimedBy: String?
}

/// Which of a center's fan-out slots a push takes (``FanoutRepository/laneSQL``).
public enum FanoutLane: String, Sendable, CaseIterable, Hashable {
    /// A list audience (registration ids, aliases), unthrottled: over in a page or two.
    case express
    /// A throttled push or a recall: mostly waiting.
    case paced
    /// Every other push: broadcasts, tags, segments.
    case bulk
}

/// A push a center may claim, and the lane it would take.
public struct ClaimCandidate: Sendable, Equatable {
    public var id: UUID
    public var lane: FanoutLane

    public init(id: UUID, lane: FanoutLane) {
        self.id = id
        self.lane = lane
    }
}

/// The result of recording a page of batches.
public enum PageRecording: Sendable, Equatable {
    /// Recorded; the fan-out goes on — after the pause ends when `paused` (the page's batches
    /// are recorded either way and may be produced).
    case recorded(paused: Bool)
    /// The push was canceled meanwhile: nothing was recorded; count the remainder as canceled.
    case canceled
    /// Another center holds the fan-out now (this one's claim lapsed): stop without writing.
    case claimLost
}

/// The outcome of one job batch, reduced to what the accounting stores.
public struct BatchOutcome: Sendable {
    public var pushID: UUID
    public var sequence: Int
    public var acceptedDeviceIDs: [Int64]
    public var failures: [Failure]

    public struct Failure: Sendable {
        public var deviceID: Int64
        public var status: FailedDelivery.Status
        public var reason: String
        public var httpStatus: Int
        /// APNs' 410 timestamp, when it gave one.
        public var unregisteredAt: Date?
        public var attempts: Int

        /// Whether this failure proves the device's token dead for its topic and environment:
        /// a rejection whose reason ``APNsReason/invalidatesToken`` (the one rule, in HeraldAPNsVocabulary).
        public var invalidatesToken: Bool { status == .rejected && APNsReason(reason).invalidatesToken }

        /// Herald's own reasons for a batch the sender could not send: the app has no credential
        /// for the environment, or the one stored cannot be used (not a valid key or certificate).
        public static let missingCredentialReason = "MissingCredential"
        public static let invalidCredentialReason = "InvalidCredential"
        /// Herald's reason for a device whose personalized notification rendered over APNs'
        /// size limit: never sent (docs/templates.md).
        public static let renderedPayloadTooLargeReason = "RenderedPayloadTooLarge"

        /// Whether the app's credential, not the device, is at fault: APNs refused it (a reason
        /// with the ``APNsReason/Disposition/credential`` disposition), or the sender had none it
        /// could use.
        public var refusesCredential: Bool {
            status == .rejected
                && (APNsReason(reason).disposition == .credential || reason == Self.missingCredentialReason
                    || reason == Self.invalidCredentialReason)
        }

        public init(
            deviceID: Int64, status: FailedDelivery.Status, reason: String, httpStatus: Int,
            unregisteredAt: Date?, attempts: Int
        ) {
            self.deviceID = deviceID
            self.status = status
            self.reason = reason
            self.httpStatus = httpStatus
            self.unregisteredAt = unregisteredAt
            self.attempts = attempts
        }
    }

    public init(pushID: UUID, sequence: Int, acceptedDeviceIDs: [Int64], failures: [Failure]) {
        self.pushID = pushID
        self.sequence = sequence
        self.acceptedDeviceIDs = acceptedDeviceIDs
        self.failures = failures
    }
}

/// What one call of the outcome accounting changed.
public struct AppliedOutcomes: Sendable, Equatable {
    /// Batches counted now (a batch's outcome seen before is not counted again).
    public var batchesCounted = 0
    /// Outcomes of batches already counted, or of batches no push recorded.
    public var batchesIgnored = 0
    public var notificationsCounted = 0
    public var tokensInvalidated = 0
    /// Pushes that became completed.
    public var pushesCompleted: [UUID] = []

    public init() {}
}

/// What the whole system looks like, as one center reports it (``FanoutRepository/systemGauges(center:lease:)``).
public struct SystemGauges: Sendable, Equatable {
    /// Unfinished pushes per state (finished ones are not counted: the table only grows).
    public var pushesByState: [String: Int64]
    /// Seconds since the oldest push still accepted, fanning out or sending was accepted; 0 without one.
    public var oldestUnfinishedPushAge: Double
    /// Outbox records not yet published to Kafka.
    public var outboxBacklog: Int64
    /// Seconds since the oldest unpublished outbox record was written; 0 without one.
    public var oldestOutboxRecordAge: Double
    /// Connections of Herald's processes to the database, by process and state (`active`, `idle`,
    /// `idle in transaction`, …), as `pg_stat_activity` shows them.
    public var connections: [Connections: Int64] = [:]
    /// Client connections to the whole PostgreSQL server (every database and program, Herald's or
    /// not), and the server's `max_connections`: how close it is to refusing new ones.
    public var serverConnections: Int64 = 0
    public var maximumConnections: Int64 = 0
    /// Apps whose client keys still follow the rules from before the trust migration
    /// (``AppRepository/legacyModeApps(limit:)``).
    public var appsInLegacyMode: Int64 = 0
    /// When each stored APNs certificate (.p12/PEM credential) expires, seconds since the epoch.
    public var certificateExpiries: [CertificateExpiry] = []

    public struct CertificateExpiry: Sendable, Equatable {
        public var appID: UUID
        public var environment: String
        public var expiresAt: Double
    }

    public struct Connections: Sendable, Hashable {
        public var application: String
        public var state: String
    }

    /// The `application_name`s Herald's processes connect with (a bounded label set).
    public static let applications = [
        "herald-api", "herald-center", "herald-sender", "herald-center-audience", "herald",
    ]
}
