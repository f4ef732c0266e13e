/// Why APNs refused a notification: Apple's documented reasons, and `unknown` for strings its
/// live servers send that its documents don't list.
public enum APNsReason: Sendable, Hashable, CustomStringConvertible {
    case badCollapseId, badDeviceToken, badExpirationDate, badMessageId, badPriority, badTopic
    case deviceTokenNotForTopic, duplicateHeaders, idleTimeout, invalidPushType, missingDeviceToken
    case missingTopic, payloadEmpty, topicDisallowed, badCertificate, badCertificateEnvironment
    case expiredProviderToken, forbidden, invalidProviderToken, missingProviderToken
    case unrelatedKeyIdInToken, badEnvironmentKeyIdInToken, badPath, methodNotAllowed
    case expiredToken, unregistered, payloadTooLarge, tooManyProviderTokenUpdates, tooManyRequests
    case internalServerError, serviceUnavailable, shutdown
    case unknown(String)

    private static let byName: [String: APNsReason] = {
        let all: [APNsReason] = [
            .badCollapseId, .badDeviceToken, .badExpirationDate, .badMessageId, .badPriority, .badTopic,
            .deviceTokenNotForTopic, .duplicateHeaders, .idleTimeout, .invalidPushType, .missingDeviceToken,
            .missingTopic, .payloadEmpty, .topicDisallowed, .badCertificate, .badCertificateEnvironment,
            .expiredProviderToken, .forbidden, .invalidProviderToken, .missingProviderToken,
            .unrelatedKeyIdInToken, .badEnvironmentKeyIdInToken, .badPath, .methodNotAllowed,
            .expiredToken, .unregistered, .payloadTooLarge, .tooManyProviderTokenUpdates, .tooManyRequests,
            .internalServerError, .serviceUnavailable, .shutdown,
        ]
        return Dictionary(uniqueKeysWithValues: all.map { ($0.description, $0) })
    }()

    /// The reason named `name` in an APNs response body.
    public init(_ name: String) {
        self = Self.byName[name] ?? .unknown(name)
    }

    /// Apple's spelling.
    public var description: String {
        switch self {
        case .badCollapseId: "BadCollapseId"
        case .badDeviceToken: "BadDeviceToken"
        case .badExpirationDate: "BadExpirationDate"
        case .badMessageId: "BadMessageId"
        case .badPriority: "BadPriority"
        case .badTopic: "BadTopic"
        case .deviceTokenNotForTopic: "DeviceTokenNotForTopic"
        case .duplicateHeaders: "DuplicateHeaders"
        case .idleTimeout: "IdleTimeout"
        case .invalidPushType: "InvalidPushType"
        case .missingDeviceToken: "MissingDeviceToken"
        case .missingTopic: "MissingTopic"
        case .payloadEmpty: "PayloadEmpty"
        case .topicDisallowed: "TopicDisallowed"
        case .badCertificate: "BadCertificate"
        case .badCertificateEnvironment: "BadCertificateEnvironment"
        case .expiredProviderToken: "ExpiredProviderToken"
        case .forbidden: "Forbidden"
        case .invalidProviderToken: "InvalidProviderToken"
        case .missingProviderToken: "MissingProviderToken"
        case .unrelatedKeyIdInToken: "UnrelatedKeyIdInToken"
        case .badEnvironmentKeyIdInToken: "BadEnvironmentKeyIdInToken"
        case .badPath: "BadPath"
        case .methodNotAllowed: "MethodNotAllowed"
        case .expiredToken: "ExpiredToken"
        case .unregistered: "Unregistered"
        case .payloadTooLarge: "PayloadTooLarge"
        case .tooManyProviderTokenUpdates: "TooManyProviderTokenUpdates"
        case .tooManyRequests: "TooManyRequests"
        case .internalServerError: "InternalServerError"
        case .serviceUnavailable: "ServiceUnavailable"
        case .shutdown: "Shutdown"
        case .unknown(let name): name
        }
    }

    /// What a sender does about it.
    public enum Disposition: Sendable, Hashable {
        /// Never send this notification again: the token, topic, payload or request is wrong.
        case permanent
        /// Send it again later (with back-off), on this or another connection.
        case retryable
        /// Fix the provider credential (token or certificate) and send again.
        case credential
    }

    public var disposition: Disposition {
        switch self {
        case .tooManyRequests, .internalServerError, .serviceUnavailable, .shutdown, .idleTimeout:
            return .retryable
        case .expiredProviderToken, .invalidProviderToken, .missingProviderToken, .tooManyProviderTokenUpdates,
             .badCertificate, .badCertificateEnvironment, .unrelatedKeyIdInToken, .badEnvironmentKeyIdInToken:
            return .credential
        case .unknown:
            return .permanent
        default:
            return .permanent
        }
    }

    /// Whether the device token should be invalidated (for this topic and environment).
    public var invalidatesToken: Bool {
        switch self {
        case .unregistered, .badDeviceToken, .deviceTokenNotForTopic, .expiredToken: true
        default: false
        }
    }
}
