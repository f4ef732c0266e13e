/// A notification's JSON payload: the `aps` dictionary Apple defines, plus custom top-level keys.
///
/// `encoded()` writes it with Herald's own JSON writer, keys in a fixed order, so the same
/// payload is always the same bytes; `validated(for:)` also checks Apple's size limit.
public struct APNsPayload: Sendable, Hashable {
    /// `aps.alert`: a plain string, or the dictionary form.
    public enum Alert: Sendable, Hashable {
        case text(String)
        case details(AlertDetails)
    }

    /// The dictionary form of `aps.alert`.
    public struct AlertDetails: Sendable, Hashable {
        public var title: String?
        public var subtitle: String?
        public var body: String?
        public var launchImage: String?
        public var titleLocalizationKey: String?
        public var titleLocalizationArguments: [String]?
        public var subtitleLocalizationKey: String?
        public var subtitleLocalizationArguments: [String]?
        public var localizationKey: String?
        public var localizationArguments: [String]?

        public init(
            title: String? = nil, subtitle: String? = nil, body: String? = nil, launchImage: String? = nil,
            titleLocalizationKey: String? = nil, titleLocalizationArguments: [String]? = nil,
            subtitleLocalizationKey: String? = nil, subtitleLocalizationArguments: [String]? = nil,
            localizationKey: String? = nil, localizationArguments: [String]? = nil
        ) {
            self.title = title
            self.subtitle = subtitle
            self.body = body
            self.launchImage = launchImage
            self.titleLocalizationKey = titleLocalizationKey
            self.titleLocalizationArguments = titleLocalizationArguments
            self.subtitleLocalizationKey = subtitleLocalizationKey
            self.subtitleLocalizationArguments = subtitleLocalizationArguments
            self.localizationKey = localizationKey
            self.localizationArguments = localizationArguments
        }
    }

    /// `aps.sound`: a sound file's name, or a critical alert's sound (needs Apple's entitlement).
    public enum Sound: Sendable, Hashable {
        case named(String)
        case critical(name: String, volume: Double)
    }

    /// `aps.interruption-level`.
    public enum InterruptionLevel: String, Sendable, Hashable {
        case passive, active
        case timeSensitive = "time-sensitive"
        case critical
    }

    /// The Live Activity keys of `aps`.
    public struct LiveActivity: Sendable, Hashable {
        public enum Event: String, Sendable, Hashable { case start, update, end }
        public var event: Event
        /// `content-state`: the activity's dynamic content, as the app's `ContentState` decodes it.
        public var contentState: JSONValue
        /// `timestamp`, seconds since 1970.
        public var timestamp: Int
        /// `stale-date`, seconds since 1970.
        public var staleDate: Int?
        /// `dismissal-date`, seconds since 1970 (for `end`).
        public var dismissalDate: Int?
        /// `attributes-type` and `attributes`, for `start`.
        public var attributesType: String?
        public var attributes: JSONValue?

        public init(
            event: Event, contentState: JSONValue, timestamp: Int, staleDate: Int? = nil, dismissalDate: Int? = nil,
            attributesType: String? = nil, attributes: JSONValue? = nil
        ) {
            self.event = event
            self.contentState = contentState
            self.timestamp = timestamp
            self.staleDate = staleDate
            self.dismissalDate = dismissalDate
            self.attributesType = attributesType
            self.attributes = attributes
        }
    }

    public var alert: Alert?
    public var badge: Int?
    public var sound: Sound?
    public var threadID: String?
    public var category: String?
    /// `content-available: 1`: a background (silent) update.
    public var contentAvailable = false
    /// `mutable-content: 1`: a notification service extension may change it.
    public var mutableContent = false
    public var targetContentID: String?
    public var interruptionLevel: InterruptionLevel?
    /// 0 to 1.
    public var relevanceScore: Double?
    public var filterCriteria: String?
    public var liveActivity: LiveActivity?
    /// Top-level keys beside `aps` (the app's own data). A key named `aps` is ignored.
    public var custom: [String: JSONValue] = [:]

    public init(alert: Alert? = nil, badge: Int? = nil, sound: Sound? = nil) {
        self.alert = alert
        self.badge = badge
        self.sound = sound
    }

    /// The payload's JSON bytes.
    public func encoded() -> [UInt8] {
        var root = JSONWriter.Object(output: [])
        root.object("aps") { aps in
            switch alert {
            case .text(let text)?: aps.field("alert", text)
            case .details(let details)?:
                aps.object("alert") { alert in
                    alert.field("title", details.title)
                    alert.field("subtitle", details.subtitle)
                    alert.field("body", details.body)
                    alert.field("launch-image", details.launchImage)
                    alert.field("title-loc-key", details.titleLocalizationKey)
                    alert.field("title-loc-args", details.titleLocalizationArguments)
                    alert.field("subtitle-loc-key", details.subtitleLocalizationKey)
                    alert.field("subtitle-loc-args", details.subtitleLocalizationArguments)
                    alert.field("loc-key", details.localizationKey)
                    alert.field("loc-args", details.localizationArguments)
                }
            case nil: break
            }
            aps.field("badge", badge)
            switch sound {
            case .named(let name)?: aps.field("sound", name)
            case .critical(let name, let volume)?:
                aps.field("sound", JSONValue.object(["critical": 1, "name": .string(name), "volume": .number(volume)]))
            case nil: break
            }
            aps.field("thread-id", threadID)
            aps.field("category", category)
            if contentAvailable { aps.field("content-available", 1) }
            if mutableContent { aps.field("mutable-content", 1) }
            aps.field("target-content-id", targetContentID)
            aps.field("interruption-level", interruptionLevel?.rawValue)
            if let relevanceScore { aps.field("relevance-score", JSONValue.number(relevanceScore)) }
            aps.field("filter-criteria", filterCriteria)
            if let liveActivity {
                aps.field("event", liveActivity.event.rawValue)
                aps.field("content-state", liveActivity.contentState)
                aps.field("timestamp", liveActivity.timestamp)
                aps.field("stale-date", liveActivity.staleDate)
                aps.field("dismissal-date", liveActivity.dismissalDate)
                aps.field("attributes-type", liveActivity.attributesType)
                if let attributes = liveActivity.attributes { aps.field("attributes", attributes) }
            }
        }
        for key in custom.keys.sorted() where key != "aps" { root.field(key, custom[key]!) }
        return root.finish()
    }

    /// The encoded payload, checked against Apple's limit for `pushType`.
    /// - Throws: ``APNsPayloadTooLarge`` with the size and the limit.
    public func validated(for pushType: APNsPushType) throws(APNsPayloadTooLarge) -> [UInt8] {
        let bytes = encoded()
        guard bytes.count <= pushType.maximumPayloadBytes else {
            throw APNsPayloadTooLarge(size: bytes.count, limit: pushType.maximumPayloadBytes, pushType: pushType)
        }
        return bytes
    }
}

/// A payload over Apple's limit: caught before sending, never discovered by APNs.
public struct APNsPayloadTooLarge: Error, Sendable, Hashable, CustomStringConvertible {
    public let size: Int
    public let limit: Int
    public let pushType: APNsPushType

    public init(size: Int, limit: Int, pushType: APNsPushType) {
        self.size = size
        self.limit = limit
        self.pushType = pushType
    }

    public var description: String {
        "the payload is \(size) bytes; APNs takes at most \(limit) for \(pushType.rawValue) notifications: shorten the text or custom data"
    }
}
