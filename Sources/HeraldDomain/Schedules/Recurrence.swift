import Foundation

/// When a schedule's pushes go out (docs/schedules.md): an RFC 5545 RRULE subset — `FREQ` DAILY,
/// WEEKLY or MONTHLY, `INTERVAL`, `BYDAY` (MO…SU), `BYMONTHDAY` (1…31), `BYHOUR`, `BYMINUTE`,
/// and `COUNT` or `UNTIL` — read in a named time zone from a local start (DTSTART). Pure: every
/// rule, daylight saving time included, is unit-tested.
///
/// Local times that do not exist (the hour skipped when clocks go forward) are sent at the same
/// wall-clock distance after the gap (02:30 → 03:30); local times that happen twice (the hour
/// repeated when clocks go back) are sent once, the first time. Two local times that fall on the
/// same instant make one occurrence.
public struct Recurrence: Sendable, Equatable {
    public enum Frequency: String, Sendable {
        case daily = "DAILY"
        case weekly = "WEEKLY"
        case monthly = "MONTHLY"
    }

    public var frequency: Frequency
    public var interval = 1
    /// ISO weekdays, 1 = Monday … 7 = Sunday; empty: the start's (weekly) or any (daily).
    public var weekdays: [Int] = []
    /// Days of the month; empty: the start's (monthly) or any.
    public var monthDays: [Int] = []
    /// Empty: the start's hour (minute).
    public var hours: [Int] = []
    public var minutes: [Int] = []
    public var count: Int?
    public var until: Date?

    /// The most occurrences a `COUNT` may ask for, and how many days ahead occurrences are looked for.
    public static let maximumCount = 10_000
    static let horizonDays = 3660

    /// A rule that cannot be read, with what to fix.
    public struct Invalid: Error, Equatable, CustomStringConvertible {
        public var description: String
    }

    static let weekdayNames = ["MO": 1, "TU": 2, "WE": 3, "TH": 4, "FR": 5, "SA": 6, "SU": 7]

    /// Reads `FREQ=WEEKLY;BYDAY=MO,WE;BYHOUR=8;BYMINUTE=0;COUNT=10` (an `RRULE:` prefix is allowed).
    public init(rrule text: String) throws(Invalid) {
        var body = text.trimmingCharacters(in: .whitespaces)
        if body.uppercased().hasPrefix("RRULE:") { body.removeFirst(6) }
        var parts: [String: String] = [:]
        for part in body.split(separator: ";", omittingEmptySubsequences: true) {
            let pair = part.split(separator: "=", maxSplits: 1).map { String($0).uppercased() }
            guard pair.count == 2, !pair[1].isEmpty else { throw Invalid(description: "\(part) is not NAME=VALUE") }
            guard parts[pair[0]] == nil else { throw Invalid(description: "\(pair[0]) is given twice") }
            parts[pair[0]] = pair[1]
        }
        guard let frequencyText = parts.removeValue(forKey: "FREQ") else {
            throw Invalid(description: "a rule needs FREQ=DAILY, WEEKLY or MONTHLY")
        }
        guard let frequency = Frequency(rawValue: frequencyText) else {
            throw Invalid(description: "FREQ=\(frequencyText) is not supported: DAILY, WEEKLY or MONTHLY")
        }
        self.frequency = frequency
        func numbers(_ name: String, _ range: ClosedRange<Int>) throws(Invalid) -> [Int] {
            guard let text = parts.removeValue(forKey: name) else { return [] }
            var values: [Int] = []
            for item in text.split(separator: ",") {
                guard let value = Int(item), range.contains(value) else {
                    throw Invalid(
                        description:
                            "\(name) takes numbers \(range.lowerBound) to \(range.upperBound) (\(item) is not one)")
                }
                values.append(value)
            }
            return Array(Set(values)).sorted()
        }
        if let text = parts.removeValue(forKey: "INTERVAL") {
            guard let value = Int(text), (1...1000).contains(value) else {
                throw Invalid(description: "INTERVAL is 1 to 1000")
            }
            interval = value
        }
        if let text = parts.removeValue(forKey: "BYDAY") {
            var days: [Int] = []
            for item in text.split(separator: ",") {
                guard let day = Self.weekdayNames[String(item)] else {
                    throw Invalid(
                        description:
                            "BYDAY takes MO, TU, WE, TH, FR, SA, SU (\(item) is not one; ordinals like 1MO are not supported)"
                    )
                }
                days.append(day)
            }
            weekdays = Array(Set(days)).sorted()
        }
        monthDays = try numbers("BYMONTHDAY", 1...31)
        hours = try numbers("BYHOUR", 0...23)
        minutes = try numbers("BYMINUTE", 0...59)
        if let text = parts.removeValue(forKey: "COUNT") {
            guard let value = Int(text), (1...Self.maximumCount).contains(value) else {
                throw Invalid(description: "COUNT is 1 to \(Self.maximumCount)")
            }
            count = value
        }
        if let text = parts.removeValue(forKey: "UNTIL") {
            guard count == nil else { throw Invalid(description: "give COUNT or UNTIL, not both") }
            guard let date = Self.untilDate(text) else {
                throw Invalid(description: "UNTIL is a UTC time such as 20261231T235959Z")
            }
            until = date
        }
        if frequency == .monthly, !weekdays.isEmpty {
            throw Invalid(description: "BYDAY with FREQ=MONTHLY is not supported; use BYMONTHDAY")
        }
        if frequency != .monthly, !monthDays.isEmpty {
            throw Invalid(description: "BYMONTHDAY goes with FREQ=MONTHLY")
        }
        if let unknown = parts.keys.sorted().first {
            throw Invalid(
                description:
                    "\(unknown) is not supported (FREQ, INTERVAL, BYDAY, BYMONTHDAY, BYHOUR, BYMINUTE, COUNT, UNTIL are)"
            )
        }
    }

    /// `20261231T235959Z`.
    static func untilDate(_ text: String) -> Date? { untilFormatter().date(from: text) }

    /// RFC 5545's UTC date-time form.
    static func untilFormatter() -> DateFormatter {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        return formatter
    }

    /// The rule as Herald stores and shows it (its parts in one order).
    public var rrule: String {
        var parts = ["FREQ=\(frequency.rawValue)"]
        if interval != 1 { parts.append("INTERVAL=\(interval)") }
        let names = Self.weekdayNames.sorted { $0.value < $1.value }.map(\.key)
        if !weekdays.isEmpty { parts.append("BYDAY=" + weekdays.map { names[$0 - 1] }.joined(separator: ",")) }
        if !monthDays.isEmpty { parts.append("BYMONTHDAY=" + monthDays.map(String.init).joined(separator: ",")) }
        if !hours.isEmpty { parts.append("BYHOUR=" + hours.map(String.init).joined(separator: ",")) }
        if !minutes.isEmpty { parts.append("BYMINUTE=" + minutes.map(String.init).joined(separator: ",")) }
        if let count { parts.append("COUNT=\(count)") }
        if let until { parts.append("UNTIL=" + Self.untilFormatter().string(from: until)) }
        return parts.joined(separator: ";")
    }

    /// A local date and time, `2026-12-01T08:00`.
    public struct LocalStart: Sendable, Equatable {
        public var year: Int, month: Int, day: Int, hour: Int, minute: Int

        public init?(_ text: String) {
            let parts = text.split(whereSeparator: { $0 == "-" || $0 == "T" || $0 == ":" }).map { Int($0) }
            guard parts.count == 5, let year = parts[0], let month = parts[1], let day = parts[2],
                let hour = parts[3], let minute = parts[4], (1970...9999).contains(year), (1...12).contains(month),
                (1...31).contains(day), (0...23).contains(hour), (0...59).contains(minute)
            else { return nil }
            (self.year, self.month, self.day, self.hour, self.minute) = (year, month, day, hour, minute)
        }

        public var text: String {
            String(format: "%04d-%02d-%02dT%02d:%02d", year, month, day, hour, minute)
        }
    }

    /// The occurrences from `start` in `timeZone`, in order, each later than `after`, at most
    /// `limit` of them. Looked for up to ``horizonDays`` past `after` (a rule with `COUNT` is
    /// counted from its start).
    public func occurrences(start: LocalStart, timeZone: TimeZone, after: Date, limit: Int) -> [Date] {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        guard
            let startDay = calendar.date(from: DateComponents(year: start.year, month: start.month, day: start.day)),
            let startAt = calendar.date(
                from: DateComponents(
                    year: start.year, month: start.month, day: start.day, hour: start.hour, minute: start.minute))
        else { return [] }
        let hours = self.hours.isEmpty ? [start.hour] : self.hours
        let minutes = self.minutes.isEmpty ? [start.minute] : self.minutes
        let startWeekday = Self.isoWeekday(calendar.component(.weekday, from: startDay))
        let weekdays = self.weekdays.isEmpty && frequency == .weekly ? [startWeekday] : self.weekdays
        let monthDays = self.monthDays.isEmpty && frequency == .monthly ? [start.day] : self.monthDays
        // Days before `after` hold nothing to return; only COUNT needs them counted.
        let daysToAfter = max(0, (calendar.dateComponents([.day], from: startDay, to: after).day ?? 0) - 1)
        var found: [Date] = []
        var counted = 0
        var last: Date?
        for offset in (count == nil ? daysToAfter : 0)..<(daysToAfter + Self.horizonDays) {
            guard let day = calendar.date(byAdding: .day, value: offset, to: startDay) else { break }
            let parts = calendar.dateComponents([.year, .month, .day, .weekday], from: day)
            guard let year = parts.year, let month = parts.month, let dayOfMonth = parts.day,
                let weekday = parts.weekday
            else { continue }
            let iso = Self.isoWeekday(weekday)
            switch frequency {
            case .daily:
                guard offset % interval == 0, weekdays.isEmpty || weekdays.contains(iso) else { continue }
            case .weekly:
                // Weeks since the Monday of the start's week.
                guard (offset + startWeekday - 1) / 7 % interval == 0, weekdays.contains(iso) else { continue }
            case .monthly:
                let months = (year - start.year) * 12 + (month - start.month)
                guard months % interval == 0, monthDays.contains(dayOfMonth) else { continue }
            }
            // The day's instants in order, each once (a skipped local time moved onto another).
            var instants = Set<Date>()
            for hour in hours {
                for minute in minutes {
                    if let at = calendar.date(
                        from: DateComponents(year: year, month: month, day: dayOfMonth, hour: hour, minute: minute))
                    {
                        instants.insert(at)
                    }
                }
            }
            for at in instants.sorted() {
                guard at >= startAt, last.map({ at > $0 }) ?? true else { continue }
                if let until, at > until { return found }
                if let count, counted >= count { return found }
                last = at
                counted += 1
                if at > after { found.append(at) }
                if found.count >= limit { return found }
            }
        }
        return found
    }

    /// Calendar's weekday (1 = Sunday) as ISO's (1 = Monday).
    static func isoWeekday(_ weekday: Int) -> Int { weekday == 1 ? 7 : weekday - 1 }
}

/// A rule with its local start and its time zone: when a schedule fires.
public struct ScheduleTiming: Sendable {
    public var rule: Recurrence
    public var start: Recurrence.LocalStart
    public var zone: TimeZone

    public init(rule: Recurrence, start: Recurrence.LocalStart, zone: TimeZone) {
        self.rule = rule
        self.start = start
        self.zone = zone
    }

    /// The occurrences later than `after`, at most `limit`.
    public func occurrences(after: Date, limit: Int) -> [Date] {
        rule.occurrences(start: start, timeZone: zone, after: after, limit: limit)
    }

    /// The first occurrence later than `after`; nil once the rule has ended.
    public func next(after: Date) -> Date? { occurrences(after: after, limit: 1).first }

    /// The timing of a schedule whose pushes go at `localTime` in each device's time zone
    /// (docs/local-time.md): the rule's days, each occurrence when the first time zone (UTC+14)
    /// reaches `localTime` that day — its push then fans out zone by zone over the next day.
    /// Itself when `localTime` is nil.
    public func atLocalTime(_ localTime: PushTiming.LocalTime?) -> ScheduleTiming {
        guard let localTime else { return self }
        var timing = self
        timing.zone = PushTiming.earliestZone
        // starts_at's date is the first day; the time of day is the local time's.
        timing.start.hour = 0
        timing.start.minute = 0
        timing.rule.hours = [localTime.hour]
        timing.rule.minutes = [localTime.minute]
        return timing
    }
}
