/// The `apns-push-type` of a notification, with the topic suffix and priorities Apple requires.
public enum APNsPushType: String, Sendable, Hashable, CaseIterable, Codable {
    case alert, background, voip, complication, fileprovider, mdm, liveactivity, location, pushtotalk, widgets, controls

    /// What `apns-topic` must be for an app with bundle id `bundleID`.
    public func topic(forBundleID bundleID: String) -> String {
        switch self {
        case .alert, .background, .mdm: bundleID
        case .voip: bundleID + ".voip"
        case .complication: bundleID + ".complication"
        case .fileprovider: bundleID + ".pushkit.fileprovider"
        case .liveactivity: bundleID + ".push-type.liveactivity"
        case .location: bundleID + ".location-query"
        case .pushtotalk: bundleID + ".voip-ptt"
        case .widgets: bundleID + ".push-type.widgets"
        case .controls: bundleID + ".push-type.controls"
        }
    }

    /// The largest payload Apple accepts for this type, in bytes.
    public var maximumPayloadBytes: Int { self == .voip ? 5120 : 4096 }

    /// Priorities Apple allows with this type (background and silent updates must use 5;
    /// Apple rejects 10 for them).
    public var allowedPriorities: Set<APNsPriority> {
        switch self {
        case .background, .widgets, .controls: [.conserve, .throttled]
        case .location, .pushtotalk, .voip: [.immediate]
        default: [.immediate, .conserve, .throttled]
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
