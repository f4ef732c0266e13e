import Foundation
import HeraldAPNsVocabulary

/// Where a push is in its life.
public enum PushState: String, Sendable, Codable {
    case scheduled
    case accepted
    case fanningOut = "fanning_out"
    case sending
    case completed
    case canceled
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

    public init(
        definition: NewPush, fanoutCursor: Int64, batchesEmitted: Int, createdAt: Date, completedAt: Date? = nil,
        canceledAt: Date? = nil, createdByKey: UUID? = nil, scheduleID: UUID? = nil, occurrenceAt: Date? = nil,
        wave: Int = 0, waves: Int? = nil
    ) {
        self.definition = definition
        self.fanoutCursor = fanoutCursor
        self.batchesEmitted = batchesEmitted
        self.createdAt = createdAt
        self.completedAt = completedAt
        self.canceledAt = canceledAt
        self.createdByKey = createdByKey
        self.scheduleID = scheduleID
        self.occurrenceAt = occurrenceAt
        self.wave = wave
        self.waves = waves
    }

    public var id: UUID { definition.id }
    public var state: PushState { definition.state }
}

/// A push's counters. Once it is completed: targeted = accepted + delivered online + rejected +
/// expired + canceled + skipped.
public struct PushCounters: Sendable, Equatable {
    public var targeted: Int64 = 0
    public var accepted: Int64 = 0
    /// Acknowledged over the device's long connection to herald-gateway (not sent through APNs).
    public var deliveredOnline: Int64 = 0
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
    public var isComplete: Bool { targeted == accepted + deliveredOnline + rejected + expired + canceled + skipped }
}

/// Why a targeted device was left out, never sent: by the fan-out for a campaign
/// (docs/delivery-policy.md), or by a sender for an online-only push (docs/gateway.md).
public enum SkipReason: String, Sendable, CaseIterable {
    /// The device already got the app's `max_pushes` campaigns in the cap's window.
    case capped
    /// It was the app's quiet hours in the device's time zone.
    case quietHours = "quiet_hours"
    /// An online-only push (`options.channel` `online`): the device was not connected to a
    /// gateway, or did not acknowledge in time.
    case offline
    /// A push with `options.skip_unauthorized`: the device's app reported that the user turned
    /// its notifications off (`authorization_status` `denied`, docs/engagement.md).
    case notAuthorized = "not_authorized"
    /// An A/B test's holdout (``PushSplit/holdout``): targeted to be compared with, never sent.
    case holdout
}

/// What herald-center and the senders read of a push's stored options (``NewPush/optionsJSON``,
/// as the API accepted them); the defaults for what they do not name, or when they cannot be read.
public struct StoredPushOptions: Sendable, Equatable {
    /// `options.channel` (docs/gateway.md).
    public var channel: PushChannel = .auto
    /// `options.skip_unauthorized`: leave out the devices whose notifications are off
    /// (docs/engagement.md).
    public var skipUnauthorized = false

    public init(json: String) {
        struct Stored: Decodable {
            var channel: PushChannel?
            var skipUnauthorized: Bool?
            enum CodingKeys: String, CodingKey {
                case channel
                case skipUnauthorized = "skip_unauthorized"
            }
        }
        guard let stored = try? JSONDecoder().decode(Stored.self, from: Data(json.utf8)) else { return }
        channel = stored.channel ?? .auto
        skipUnauthorized = stored.skipUnauthorized ?? false
    }
}

/// The road a push takes to its devices (`options.channel`, docs/gateway.md).
public enum PushChannel: String, Sendable, CaseIterable, Codable {
    /// Over the device's long connection when it holds one, through APNs otherwise (the default).
    case auto
    /// Through APNs only.
    case apns
    /// Only to devices connected now (in-app messages); the rest skipped, reason `offline`.
    case online

    /// The channel a push's stored options (``NewPush/optionsJSON``) name: `auto` when they name
    /// none, or cannot be read.
    public init(optionsJSON: String) {
        self = StoredPushOptions(json: optionsJSON).channel
    }
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

    public init(
        pushID: UUID, deviceID: Int64, status: Status, reason: String? = nil, httpStatus: Int? = nil, attempts: Int
    ) {
        self.pushID = pushID
        self.deviceID = deviceID
        self.status = status
        self.reason = reason
        self.httpStatus = httpStatus
        self.attempts = attempts
    }
}
