import Foundation

/// One thing a device's user did with a push (docs/engagement.md), as `POST /v1/events` takes it.
public struct EngagementEvent: Sendable, Codable, Equatable {
    public enum Kind: String, Sendable, Codable {
        case received, opened, action, dismissed
    }

    /// The push, as its payload names it under `herald.push_id` (lower case).
    public var pushId: String
    /// The device's token in hexadecimal.
    public var token: String
    public var type: Kind
    /// The action's identifier (with `.action` only).
    public var action: String?
    /// Whether the action carried text the user typed (never the text itself).
    public var textInput: Bool?
    public var occurredAt: Date

    public init(
        pushID: UUID, token: String, type: Kind, action: String? = nil, textInput: Bool? = nil, occurredAt: Date
    ) {
        pushId = pushID.uuidString.lowercased()
        self.token = token.lowercased()
        self.type = type
        self.action = action
        self.textInput = textInput
        self.occurredAt = occurredAt
    }
}

struct EventBatch: Encodable {
    var events: [EngagementEvent]
}

/// What a stored batch counted (`POST /v1/events`' answer).
public struct EventBatchResult: Sendable, Decodable, Equatable {
    public var received: Int
    public var counted: Int
    public var duplicates: Int
}
