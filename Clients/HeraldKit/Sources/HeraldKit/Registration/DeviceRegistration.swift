import Foundation

/// The body of `POST /v1/devices` as an app sends it with its client key (docs/api.md): the token,
/// and what the app knows about the device and its user. Absent fields keep what the server has.
public struct DeviceRegistration: Sendable, Equatable, Encodable {
    /// The APNs device token in lower-case hexadecimal.
    public var token: String
    /// `production` or `sandbox` (a development build's tokens are sandbox ones).
    public var environment: String
    /// The token this one replaces: the server moves the old token's alias, tags and attributes to
    /// this one and retires it at once, instead of waiting for APNs to reject it.
    public var previousToken: String?
    public var alias: String?
    /// The app back-end's signature of (token, alias, expiry) (docs/security.md).
    public var aliasSignature: String?
    public var tags: [String]?
    public var attributes: [String: JSONValue]?
    public var locale: String?
    public var timeZone: String?
    public var appVersion: String?
    public var osVersion: String?
    /// `authorized`, `provisional`, `ephemeral`, `denied` or `not_determined`.
    public var authorizationStatus: String?

    public init(token: String, environment: String) {
        self.token = token.lowercased()
        self.environment = environment
    }
}

/// What `POST /v1/devices` answers that HeraldKit reads (the whole token is never returned).
public struct RegisteredDevice: Sendable, Equatable, Decodable {
    /// The token's first 8 hexadecimal digits.
    public var tokenPrefix: String
    public var environment: String
    public var alias: String?
    public var tags: [String]?
    public var status: String?
}

/// The device's registration as the app last made it, kept on disk: which token the server knows
/// (so a new one is sent with `previous_token`), and the alias bound.
public struct RegistrationRecord: Sendable, Codable, Equatable {
    public var token: String?
    public var environment: String?
    public var alias: String?
    public var registeredAt: Date?

    public init(token: String? = nil, environment: String? = nil, alias: String? = nil, registeredAt: Date? = nil) {
        self.token = token
        self.environment = environment
        self.alias = alias
        self.registeredAt = registeredAt
    }

    /// The registration to send for `token` on this launch: always (a launch refreshes the
    /// device, reactivating a token APNs had declared dead), with `previous_token` when the token
    /// changed since the last registration that succeeded.
    public func registration(for token: String, environment: String) -> DeviceRegistration {
        var registration = DeviceRegistration(token: token, environment: environment)
        if let known = self.token, known != registration.token {
            registration.previousToken = known
        }
        return registration
    }

    /// The record after `registration` succeeded.
    public func after(_ registration: DeviceRegistration, at now: Date) -> RegistrationRecord {
        RegistrationRecord(
            token: registration.token, environment: registration.environment, alias: registration.alias ?? alias,
            registeredAt: now)
    }
}

/// Hex of a token's bytes, as the API and the gateway take it.
public func hexadecimal(_ bytes: some Sequence<UInt8>) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var text = [UInt8]()
    for byte in bytes {
        text.append(digits[Int(byte >> 4)])
        text.append(digits[Int(byte & 0x0f)])
    }
    return String(decoding: text, as: UTF8.self)
}
