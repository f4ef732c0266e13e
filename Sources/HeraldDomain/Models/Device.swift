import Foundation
import HeraldAPNsVocabulary

/// Whether a device is targeted.
public enum DeviceStatus: String, Sendable, Codable {
    case active
    /// APNs said the token is dead; it is skipped until the device registers again.
    case invalid
}

/// Whether the user lets the app show notifications, as its app reports it: Apple's
/// `UNAuthorizationStatus` (docs/engagement.md).
public enum AuthorizationStatus: String, Sendable, CaseIterable {
    case authorized, provisional, ephemeral, denied
    case notDetermined = "not_determined"
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
    /// Nil: the device's stays as it was.
    public var authorizationStatus: AuthorizationStatus?
    /// The token APNs replaced with this one: its registration is retired in the same transaction
    /// and its profile carried over where this registration gives none (docs/api.md).
    public var previousToken: [UInt8]?
    /// Whether the previous token's alias moves to this one (not for a client key of an app that
    /// verifies identities without a signature for the new token).
    public var carriesAlias = true

    public init(
        appID: UUID, token: [UInt8], environment: APNsEnvironment, topic: String, alias: String? = nil,
        tags: [String] = [], locale: String? = nil, timeZone: String? = nil, country: String? = nil,
        appVersion: String? = nil, osVersion: String? = nil,
        attributes: (set: [String: JSONValue], removed: [String]) = ([:], []),
        authorizationStatus: AuthorizationStatus? = nil
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
        self.authorizationStatus = authorizationStatus
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
    /// Nil until its app reported it.
    public var authorizationStatus: AuthorizationStatus? = nil

    public init(
        id: Int64, appID: UUID, token: [UInt8], environment: APNsEnvironment, topic: String, alias: String? = nil,
        tags: [String], locale: String? = nil, timeZone: String? = nil, status: DeviceStatus, registeredAt: Date,
        updatedAt: Date, invalidatedAt: Date? = nil, invalidReason: String? = nil, country: String? = nil,
        appVersion: String? = nil, osVersion: String? = nil, firstRegisteredAt: Date? = nil,
        attributes: [String: JSONValue] = [:]
    ) {
        self.id = id
        self.appID = appID
        self.token = token
        self.environment = environment
        self.topic = topic
        self.alias = alias
        self.tags = tags
        self.locale = locale
        self.timeZone = timeZone
        self.status = status
        self.registeredAt = registeredAt
        self.updatedAt = updatedAt
        self.invalidatedAt = invalidatedAt
        self.invalidReason = invalidReason
        self.country = country
        self.appVersion = appVersion
        self.osVersion = osVersion
        self.firstRegisteredAt = firstRegisteredAt
        self.attributes = attributes
    }
}
