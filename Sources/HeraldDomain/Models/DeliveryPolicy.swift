import Foundation

/// An app's quiet hours and frequency cap (docs/delivery-policy.md), stored in
/// `apps.delivery_policy` and enforced by the fan-out for campaign pushes; transactional pushes
/// and recalls are exempt.
public struct DeliveryPolicy: Sendable, Equatable, Codable {
    /// Local times, in minutes after midnight, between which no campaign reaches a device;
    /// `start > end` spans midnight (22:00–08:00).
    public struct QuietHours: Sendable, Equatable, Codable {
        public var startMinute: Int
        public var endMinute: Int

        enum CodingKeys: String, CodingKey {
            case startMinute = "start_minute"
            case endMinute = "end_minute"
        }

        public init(startMinute: Int, endMinute: Int) {
            self.startMinute = startMinute
            self.endMinute = endMinute
        }

        /// Whether `minute` (after local midnight) falls in the window: from the start, up to
        /// but not including the end.
        public func contains(minute: Int) -> Bool {
            startMinute <= endMinute
                ? minute >= startMinute && minute < endMinute
                : minute >= startMinute || minute < endMinute
        }
    }

    /// At most `maxPushes` campaigns reach a device in any `windowSeconds`.
    public struct FrequencyCap: Sendable, Equatable, Codable {
        public var maxPushes: Int
        public var windowSeconds: Int

        enum CodingKeys: String, CodingKey {
            case maxPushes = "max_pushes"
            case windowSeconds = "window_seconds"
        }

        public init(maxPushes: Int, windowSeconds: Int) {
            self.maxPushes = maxPushes
            self.windowSeconds = windowSeconds
        }
    }

    public var quietHours: QuietHours?
    /// The time zone of devices that have none (an IANA name); UTC when absent.
    public var defaultTimeZone: String?
    public var frequencyCap: FrequencyCap?

    enum CodingKeys: String, CodingKey {
        case quietHours = "quiet_hours"
        case defaultTimeZone = "default_time_zone"
        case frequencyCap = "frequency_cap"
    }

    public init(quietHours: QuietHours? = nil, defaultTimeZone: String? = nil, frequencyCap: FrequencyCap? = nil) {
        self.quietHours = quietHours
        self.defaultTimeZone = defaultTimeZone
        self.frequencyCap = frequencyCap
    }

    /// Limits (docs/limits.md): a cap of 1 to 1,000 pushes in 1 hour to 7 days.
    public static let maximumCapPushes = 1000
    public static let capWindowSeconds = 3600...(7 * 86_400)

    /// The time zone of a device without one (or with a name that is not an IANA zone): the
    /// app's default, else UTC.
    public var defaultZone: TimeZone { Self.zone(defaultTimeZone) }

    /// The zone `name` names, else UTC (an app without a policy, or without a default).
    public static func zone(_ name: String?) -> TimeZone {
        name.flatMap(TimeZone.init(identifier:)) ?? TimeZone(identifier: "UTC")!
    }

    /// The zone of a device whose `time_zone` is `name`: that IANA zone, else (`""` for none, or a
    /// name that is no IANA zone) `fallback`, the app's default. The one rule the wave planner and
    /// the quiet-hours filter both use.
    public static func zone(ofDevice name: String, fallback: TimeZone) -> TimeZone {
        name.isEmpty ? fallback : TimeZone(identifier: name) ?? fallback
    }

    /// Minutes after local midnight (0..<1440) in `zone` at `instant`: the clock the quiet hours
    /// are read on.
    public static func localMinute(at instant: Date, in zone: TimeZone) -> Int {
        let local = instant.timeIntervalSince1970 + Double(zone.secondsFromGMT(for: instant))
        let minute = Int((local / 60).rounded(.down)) % 1440
        return minute < 0 ? minute + 1440 : minute
    }

    /// Whether it leaves anything out.
    public var isEmpty: Bool { quietHours == nil && frequencyCap == nil }

    /// The stored JSON.
    public var json: String { storedJSON }

    /// Reads the stored JSON; nil for none (or JSON Herald did not write).
    public init?(json: String?) {
        guard let json, let policy = try? JSONDecoder().decode(DeliveryPolicy.self, from: Data(json.utf8)) else {
            return nil
        }
        self = policy
    }
}
