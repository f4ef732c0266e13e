import Foundation

/// One wave of a push sent in waves (docs/local-time.md): the devices of its audience whose time
/// zone is one of `timeZones` (`""`: devices without one), fanned out from `dueAt`.
public struct PushWave: Sendable, Equatable {
    public var index: Int
    public var dueAt: Date
    public var timeZones: [String]
    /// How many devices were in the wave's time zones when the plan was made.
    public var devices: Int64
    /// The sequence of the wave's first job batch; nil until the wave starts.
    public var firstSequence: Int?

    public init(index: Int, dueAt: Date, timeZones: [String], devices: Int64, firstSequence: Int? = nil) {
        self.index = index
        self.dueAt = dueAt
        self.timeZones = timeZones
        self.devices = devices
        self.firstSequence = firstSequence
    }
}

extension [PushWave] {
    /// The wave that cut the batch numbered `sequence`: the last started wave whose first batch
    /// is not after it.
    public func wave(ofBatch sequence: Int) -> PushWave? {
        last { wave in wave.firstSequence.map { $0 <= sequence } ?? false }
    }
}

/// Cuts a push's audience, grouped by time zone, into waves: each zone gets the instant its
/// devices should get the push — the push's local time there (DST-aware: a local time a clock
/// change skips is reached when the clock jumps past it, one it repeats is reached once, the first
/// time), then moved to the end of the app's quiet hours if it falls inside them and the push
/// holds — and zones reaching the same instant share a wave. Pure: the audience's time zones and
/// the time come in, so every rule is unit-tested.
public struct WavePlanner: Sendable {
    public var timing: PushTiming
    /// The app's quiet hours, when the push holds them; nil otherwise.
    public var heldQuietHours: DeliveryPolicy.QuietHours?
    /// Devices without a time zone, or with a name that is not an IANA zone, are in this one:
    /// the app's default time zone, else UTC.
    public var defaultTimeZone: TimeZone

    public init(timing: PushTiming, policy: DeliveryPolicy?) {
        self.timing = timing
        heldQuietHours = timing.quietHours == .hold ? policy?.quietHours : nil
        defaultTimeZone = DeliveryPolicy.zone(policy?.defaultTimeZone)
    }

    /// At most this many waves: zones whose instants differ by less than a minute share one, and
    /// the world's zones are about 40 offsets apart.
    public static let maximumWaves = 200

    /// The waves of an audience whose devices are `groups` (a time zone name, `""` for none, and
    /// how many devices have it), planned at `start`: in time order, the first never before
    /// `start` (an instant already passed — a local date whose time went by — is sent at once).
    public func plan(groups: [(timeZone: String, devices: Int64)], start: Date) -> [PushWave] {
        var byMinute: [Int64: (zones: [String], devices: Int64)] = [:]
        for group in groups where group.devices > 0 {
            let zone = DeliveryPolicy.zone(ofDevice: group.timeZone, fallback: defaultTimeZone)
            let due = max(start, instant(in: zone, start: start))
            // Instants within the same minute share a wave (a zone 30 seconds off, or `start`).
            let minute = due <= start ? Int64.min : Int64((due.timeIntervalSince1970 / 60).rounded(.up))
            byMinute[minute, default: ([], 0)].zones.append(group.timeZone)
            byMinute[minute, default: ([], 0)].devices += group.devices
        }
        var waves: [PushWave] = []
        for (minute, group) in byMinute.sorted(by: { $0.key < $1.key }) {
            let due = minute == .min ? start : Date(timeIntervalSince1970: TimeInterval(minute) * 60)
            waves.append(
                PushWave(index: waves.count, dueAt: due, timeZones: group.zones.sorted(), devices: group.devices))
        }
        guard waves.count > Self.maximumWaves else { return waves }
        // Never expected; the last waves are merged rather than the plan refused.
        var kept = Array(waves.prefix(Self.maximumWaves))
        for wave in waves.dropFirst(Self.maximumWaves) {
            kept[kept.count - 1].timeZones += wave.timeZones
            kept[kept.count - 1].devices += wave.devices
        }
        return kept
    }

    /// When a device in `zone` should get the push planned at `start` (possibly before `start`:
    /// a local date whose time has passed there).
    public func instant(in zone: TimeZone, start: Date) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        var at = start
        if let time = timing.localTime {
            if let date = timing.localDate {
                at =
                    calendar.date(
                        from: DateComponents(
                            year: date.year, month: date.month, day: date.day, hour: time.hour, minute: time.minute))
                    ?? start
            } else {
                // The next time the zone's clock shows it: today's, else tomorrow's.
                let today = calendar.dateComponents([.year, .month, .day], from: start)
                at = Self.date(today, time.hour, time.minute, calendar: calendar) ?? start
                if at < start, let tomorrow = calendar.date(byAdding: .day, value: 1, to: start) {
                    let next = calendar.dateComponents([.year, .month, .day], from: tomorrow)
                    at = Self.date(next, time.hour, time.minute, calendar: calendar) ?? at
                }
            }
        }
        return heldQuietHours.map { quietEnd(after: max(at, start), quiet: $0, calendar: calendar) } ?? at
    }

    /// `at`, or — when it falls in the quiet hours of `calendar`'s zone — the end of them.
    func quietEnd(after at: Date, quiet: DeliveryPolicy.QuietHours, calendar: Calendar) -> Date {
        guard quiet.contains(minute: DeliveryPolicy.localMinute(at: at, in: calendar.timeZone)) else { return at }
        let day = calendar.dateComponents([.year, .month, .day], from: at)
        guard var end = Self.date(day, quiet.endMinute / 60, quiet.endMinute % 60, calendar: calendar) else {
            return at
        }
        if end <= at, let tomorrow = calendar.date(byAdding: .day, value: 1, to: at) {
            let next = calendar.dateComponents([.year, .month, .day], from: tomorrow)
            end = Self.date(next, quiet.endMinute / 60, quiet.endMinute % 60, calendar: calendar) ?? end
        }
        return end
    }

    static func date(_ day: DateComponents, _ hour: Int, _ minute: Int, calendar: Calendar) -> Date? {
        calendar.date(from: DateComponents(year: day.year, month: day.month, day: day.day, hour: hour, minute: minute))
    }
}
