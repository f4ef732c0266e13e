/// The `apns-push-type` of a notification, with the topic suffix and priorities Apple requires.
public enum APNsPushType: String, Sendable, Hashable, CaseIterable, Codable {
    case alert, background, voip, complication, fileprovider, mdm, liveactivity, location, pushtotalk, widgets, controls

    /// What Apple requires `apns-topic` to end with for this type, after the bundle id (nil:
    /// the bundle id itself).
    public var topicSuffix: String? {
        switch self {
        case .alert, .background, .mdm: nil
        case .voip: ".voip"
        case .complication: ".complication"
        case .fileprovider: ".pushkit.fileprovider"
        case .liveactivity: ".push-type.liveactivity"
        case .location: ".location-query"
        case .pushtotalk: ".voip-ptt"
        case .widgets: ".push-type.widgets"
        case .controls: ".push-type.controls"
        }
    }

    /// What `apns-topic` must be for an app with bundle id `bundleID`.
    public func topic(forBundleID bundleID: String) -> String { bundleID + (topicSuffix ?? "") }

    /// Every topic an app with bundle id `bundleID` may use: the bundle id, and it followed by
    /// one of Apple's push-type suffixes. Nothing else is that app's to send to.
    public static func topics(forBundleID bundleID: String) -> Set<String> {
        Set(allCases.map { $0.topic(forBundleID: bundleID) })
    }

    /// The largest payload Apple accepts for this type, in bytes.
    public var maximumPayloadBytes: Int { self == .voip ? 5120 : 4096 }

    /// Priorities Apple allows with this type (background and silent updates must use 5;
    /// Apple rejects 10 for them).
    public var allowedPriorities: Set<APNsPriority> {
        Set([APNsPriority.immediate, .conserve, .throttled].filter(allows))
    }

    /// Whether Apple allows `priority` with this type (the one rule behind
    /// ``allowedPriorities``; checked per notification, so it allocates nothing).
    public func allows(_ priority: APNsPriority) -> Bool {
        switch self {
        case .background, .widgets, .controls: priority != .immediate
        case .location, .pushtotalk, .voip: priority == .immediate
        default: true
        }
    }

    /// The priority used when the caller names none.
    public var defaultPriority: APNsPriority { allowedPriorities.contains(.immediate) ? .immediate : .conserve }
}

/// `apns-priority`.
public enum APNsPriority: Int, Sendable, Hashable, Codable {
    /// 10: deliver now (alerts, sounds, badges).
    case immediate = 10
    /// 5: deliver when it suits the device's power (required for background pushes).
    case conserve = 5
    /// 1: lowest, may be dropped under power constraints.
    case throttled = 1
}
