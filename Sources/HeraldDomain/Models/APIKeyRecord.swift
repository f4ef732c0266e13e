import Foundation
import HeraldAPNsVocabulary

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

    public init(
        id: UUID, appID: UUID, kind: APIKeyKind, keyPrefix: String, name: String, createdAt: Date,
        lastUsedAt: Date? = nil, revokedAt: Date? = nil, scopes: [APIKeyScope]? = nil
    ) {
        self.id = id
        self.appID = appID
        self.kind = kind
        self.keyPrefix = keyPrefix
        self.name = name
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
        self.revokedAt = revokedAt
        self.scopes = scopes
    }
}
