import Foundation

/// What a push's options asked about time beyond "now" or `scheduled_at` (docs/local-time.md),
/// stored as `pushes.timing`: a local time to reach each device at, how quiet hours treat it,
/// and — for a push sent in waves — how long each wave's notifications live.
public struct PushTiming: Codable, Sendable, Equatable {
    /// `"09:00"`: each device gets the push when its own time zone reaches this time.
    public var localTime: LocalTime?
    /// `"2026-12-01"`: the local date of ``localTime``; nil: the next time each zone reaches it.
    public var localDate: LocalDate?
    /// Devices in their quiet hours: skipped (nil, the default) or held until the hours end.
    public var quietHours: QuietHoursMode?
    /// A push in waves: each wave's notifications expire this long after the wave starts.
    public var timeToLiveSeconds: Int?

    enum CodingKeys: String, CodingKey {
        case localTime = "local_time"
        case localDate = "local_date"
        case quietHours = "quiet_hours"
        case timeToLiveSeconds = "time_to_live_s"
    }

    public init(
        localTime: LocalTime? = nil, localDate: LocalDate? = nil, quietHours: QuietHoursMode? = nil,
        timeToLiveSeconds: Int? = nil
    ) {
        self.localTime = localTime
        self.localDate = localDate
        self.quietHours = quietHours
        self.timeToLiveSeconds = timeToLiveSeconds
    }

    /// Whether it asks for nothing.
    public var isEmpty: Bool { localTime == nil && quietHours == nil && timeToLiveSeconds == nil }

    /// Whether the push fans out in waves: at a local time, or holding its devices' quiet hours
    /// (when the app has quiet hours: `appHasQuietHours`).
    public func sendsInWaves(appHasQuietHours: Bool) -> Bool {
        localTime != nil || (quietHours == .hold && appHasQuietHours)
    }

    /// When the first time zone on Earth (UTC+14) reaches ``localTime`` on ``localDate``: a push
    /// for a local date is planned then. Nil without both.
    public func earliestInstant() -> Date? { instant(in: Self.earliestZone) }

    /// When the last time zone (UTC−12) reaches ``localTime`` on ``localDate``.
    public func latestInstant() -> Date? { instant(in: Self.latestZone) }

    /// The first time zone on Earth, UTC+14, where a day's local time comes first; and the last.
    public static let earliestZone = TimeZone(secondsFromGMT: 14 * 3600)!
    static let latestZone = TimeZone(secondsFromGMT: -12 * 3600)!

    private func instant(in zone: TimeZone) -> Date? {
        guard let time = localTime, let date = localDate else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        return calendar.date(
            from: DateComponents(
                year: date.year, month: date.month, day: date.day, hour: time.hour, minute: time.minute))
    }

    /// The stored JSON.
    public var json: String { storedJSON }

    /// Reads the stored JSON; nil for none (or JSON Herald did not write).
    public init?(json: String?) {
        guard let json, let timing = try? JSONDecoder().decode(PushTiming.self, from: Data(json.utf8)) else {
            return nil
        }
        self = timing
    }

    /// A wall-clock time, `HH:MM`.
    public struct LocalTime: Sendable, Equatable, StoredAsText {
        public var hour: Int
        public var minute: Int

        public init?(_ text: String) {
            let parts = text.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 2, parts.allSatisfy({ $0.count == 2 }), let hour = Int(parts[0]),
                let minute = Int(parts[1]), (0...23).contains(hour), (0...59).contains(minute)
            else { return nil }
            self.hour = hour
            self.minute = minute
        }

        public var description: String { String(format: "%02d:%02d", hour, minute) }
    }

    /// A calendar date, `YYYY-MM-DD`.
    public struct LocalDate: Sendable, Equatable, StoredAsText {
        public var year: Int
        public var month: Int
        public var day: Int

        public init?(_ text: String) {
            let parts = text.split(separator: "-", omittingEmptySubsequences: false)
            guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
                let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
                (1970...9999).contains(year), (1...12).contains(month), (1...31).contains(day)
            else { return nil }
            // A day the month does not have (2026-02-30) is no date.
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = TimeZone(identifier: "UTC")!
            guard let date = calendar.date(from: DateComponents(year: year, month: month, day: day)),
                calendar.component(.day, from: date) == day
            else { return nil }
            (self.year, self.month, self.day) = (year, month, day)
        }

        /// The date `instant` falls on in `zone`.
        public init(_ instant: Date, in zone: TimeZone) {
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = zone
            let parts = calendar.dateComponents([.year, .month, .day], from: instant)
            (year, month, day) = (parts.year ?? 1970, parts.month ?? 1, parts.day ?? 1)
        }

        public var description: String { String(format: "%04d-%02d-%02d", year, month, day) }
    }
}

/// How a campaign treats the devices in the app's quiet hours (docs/delivery-policy.md).
public enum QuietHoursMode: String, Codable, Sendable, CaseIterable {
    /// Left out, counted as skipped (`quiet_hours`).
    case skip
    /// Sent when the quiet hours end in the device's time zone.
    case hold
}

/// A value stored in JSON as its text (`"09:00"`, `"2026-12-01"`), read back with `init?(_:)`.
public protocol StoredAsText: Codable, CustomStringConvertible {
    init?(_ text: String)
}

extension StoredAsText {
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let value = Self(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: text))
        }
        self = value
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
