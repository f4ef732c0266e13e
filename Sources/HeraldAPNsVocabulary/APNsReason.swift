/// Why APNs refused a notification: Apple's documented reasons, and `unknown` for strings its
/// live servers send that its documents don't list.
///
/// One definition for Herald: the sender reads these from APNs' answers, and apns-sim answers
/// with them.
public enum APNsReason: Error, Sendable, Hashable, CustomStringConvertible {
    case badCollapseId, badDeviceToken, badExpirationDate, badMessageId, badPriority, badTopic
    case deviceTokenNotForTopic, duplicateHeaders, idleTimeout, invalidPushType, missingDeviceToken
    case missingTopic, payloadEmpty, topicDisallowed, badCertificate, badCertificateEnvironment
    case expiredProviderToken, forbidden, invalidProviderToken, missingProviderToken
    case unrelatedKeyIdInToken, badEnvironmentKeyIdInToken, badPath, methodNotAllowed
    case expiredToken, unregistered, payloadTooLarge, tooManyProviderTokenUpdates, tooManyRequests
    case internalServerError, serviceUnavailable, shutdown
    case unknown(String)

    /// Every reason Apple documents.
    public static let documented: [APNsReason] = [
        .badCollapseId, .badDeviceToken, .badExpirationDate, .badMessageId, .badPriority, .badTopic,
        .deviceTokenNotForTopic, .duplicateHeaders, .idleTimeout, .invalidPushType, .missingDeviceToken,
        .missingTopic, .payloadEmpty, .topicDisallowed, .badCertificate, .badCertificateEnvironment,
        .expiredProviderToken, .forbidden, .invalidProviderToken, .missingProviderToken,
        .unrelatedKeyIdInToken, .badEnvironmentKeyIdInToken, .badPath, .methodNotAllowed,
        .expiredToken, .unregistered, .payloadTooLarge, .tooManyProviderTokenUpdates, .tooManyRequests,
        .internalServerError, .serviceUnavailable, .shutdown,
    ]

    private static let byName: [String: APNsReason] =
        Dictionary(uniqueKeysWithValues: documented.map { ($0.description, $0) })

    /// The HTTP status Apple sends with this reason (0 for a reason Apple does not document).
    public var status: Int {
        switch self {
        case .badCertificate, .badCertificateEnvironment, .expiredProviderToken, .forbidden, .invalidProviderToken,
            .missingProviderToken, .unrelatedKeyIdInToken, .badEnvironmentKeyIdInToken:
            403
        case .badPath: 404
        case .methodNotAllowed: 405
        case .expiredToken, .unregistered: 410
        case .payloadTooLarge: 413
        case .tooManyProviderTokenUpdates, .tooManyRequests: 429
        case .internalServerError: 500
        case .serviceUnavailable, .shutdown: 503
        case .unknown: 0
        default: 400
        }
    }

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
