import Foundation

/// What a device did with a push it was sent, as it reports it (`POST /v1/events`,
/// docs/engagement.md).
public enum EngagementType: String, Sendable, CaseIterable {
    /// The notification service extension ran: the notification reached the phone.
    case received
    /// The user opened the notification.
    case opened
    /// The user chose one of the notification's actions.
    case action
    /// The user dismissed the notification.
    case dismissed
}

/// One reported event, checked for shape: its push, its device's token, what happened and when.
public struct EngagementReport: Sendable, Equatable {
    public var pushID: UUID
    /// The device's APNs token, as bytes.
    public var token: [UInt8]
    public var type: EngagementType
    /// The action's identifier for ``EngagementType/action``, empty for the other types.
    public var action: String
    /// Whether the action carried text input (never the text).
    public var textInput: Bool
    /// The device's clock when it happened.
    public var occurredAt: Date

    public init(pushID: UUID, token: [UInt8], type: EngagementType, action: String, textInput: Bool, occurredAt: Date) {
        self.pushID = pushID
        self.token = token
        self.type = type
        self.action = action
        self.textInput = textInput
        self.occurredAt = occurredAt
    }
}

/// The limits an event batch is held to, named in docs/limits.md.
public enum EngagementLimits {
    /// Events in one batch.
    public static let eventsPerBatch = 500
    /// Characters of an action identifier.
    public static let actionLength = 64

    /// Whether `text` may be an action identifier: 1 to ``actionLength`` ASCII letters, digits,
    /// `.`, `_`, `:` or `-` (the shape of the identifiers apps give `UNNotificationAction`s).
    public static func isActionIdentifier(_ text: String) -> Bool {
        let bytes = text.utf8
        return (1...actionLength).contains(bytes.count)
            && bytes.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: ":"),
                    UInt8(ascii: "-"):
                    true
                default: false
                }
            }
    }
    /// How old an event may be when reported: a phone offline for longer drops it.
    public static let window: TimeInterval = 7 * 24 * 3600
    /// How far ahead of the server's clock a device's clock may run.
    public static let clockSkew: TimeInterval = 10 * 60
}

/// A push's engagement: devices that reported each type, each (device, type, action) once.
public struct EngagementCounts: Sendable, Equatable {
    public var received: Int64 = 0
    public var opened: Int64 = 0
    public var dismissed: Int64 = 0
    /// Devices that chose each action, by its identifier.
    public var actions: [String: Int64] = [:]

    public init(received: Int64 = 0, opened: Int64 = 0, dismissed: Int64 = 0, actions: [String: Int64] = [:]) {
        self.received = received
        self.opened = opened
        self.dismissed = dismissed
        self.actions = actions
    }

    /// `count` ÷ `reached`, 0 when nothing was reached.
    public static func rate(_ count: Int64, of reached: Int64) -> Double {
        reached > 0 ? Double(count) / Double(reached) : 0
    }
}
