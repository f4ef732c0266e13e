import Foundation
import OpenAPIRuntime

/// Dates in the Open API's bodies: RFC 3339 in UTC to the second (`2026-11-26T11:30:00Z`), as
/// OpenAPIRuntime's default ``ISO8601DateTranscoder`` writes them, written here by arithmetic.
///
/// Every accepted push answers with its `created_at`; Foundation's ISO 8601 formatter took 1.1%
/// of herald-api's CPU under `make bench-api`. Years outside 1–9999 are written by the default
/// transcoder too.
///
/// Reading: the form it writes (`2026-11-26T11:30:00Z`) is read by arithmetic as well, and
/// everything else (offsets, other years, dates the calendar lacks) by the default transcoder,
/// which accepts what it always accepted. A batch of engagement events carries a date each; the
/// default transcoder (one ISO 8601 formatter behind a lock, ICU underneath) held
/// `make bench-events` to about 6,000 events/s, herald-api's one busy core in its lock and ICU.
struct InternetDateTranscoder: DateTranscoder {
    private let standard = ISO8601DateTranscoder.iso8601

    func encode(_ date: Date) throws -> String {
        // As Foundation does: to the nearest millisecond, then down to the second.
        let seconds = ((date.timeIntervalSince1970 * 1000).rounded() / 1000).rounded(.down)
        guard abs(seconds) < 1e12 else { return try standard.encode(date) }
        let (days, secondOfDay) = Int(seconds).quotientAndRemainder(dividingBy: 86_400)
        let civil = Self.civil(daysSince1970: secondOfDay < 0 ? days - 1 : days)
        let second = secondOfDay < 0 ? secondOfDay + 86_400 : secondOfDay
        guard (1...9999).contains(civil.year) else { return try standard.encode(date) }
        return String(unsafeUninitializedCapacity: 20) { buffer in
            var end = 0
            func put(_ value: Int, digits: Int, then separator: Unicode.Scalar) {
                var rest = value
                for position in (0..<digits).reversed() {
                    buffer[end + position] = UInt8(ascii: "0") + UInt8(rest % 10)
                    rest /= 10
                }
                buffer[end + digits] = UInt8(ascii: separator)
                end += digits + 1
            }
            put(civil.year, digits: 4, then: "-")
            put(civil.month, digits: 2, then: "-")
            put(civil.day, digits: 2, then: "T")
            put(second / 3600, digits: 2, then: ":")
            put(second / 60 % 60, digits: 2, then: ":")
            put(second % 60, digits: 2, then: "Z")
            return end
        }
    }

    func decode(_ text: String) throws -> Date {
        if let date = Self.internetDate(text) { return date }
        return try standard.decode(text)
    }

    /// `YYYY-MM-DDTHH:MM:SSZ` with a real calendar date of the years 1900 to 2200 (those the tests
    /// compare with the ISO 8601 transcoder) and a time before 24:00; nil for any other text.
    static func internetDate(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { bytes -> Date? in
            guard bytes.count == 20, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
                bytes[10] == UInt8(ascii: "T"), bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"),
                bytes[19] == UInt8(ascii: "Z")
            else { return nil }
            func number(_ start: Int, _ digits: Int) -> Int? {
                var value = 0
                for index in start..<(start + digits) {
                    let digit = bytes[index] &- UInt8(ascii: "0")
                    guard digit < 10 else { return nil }
                    value = value * 10 + Int(digit)
                }
                return value
            }
            guard let year = number(0, 4), let month = number(5, 2), let day = number(8, 2),
                let hour = number(11, 2), let minute = number(14, 2), let second = number(17, 2),
                (1900...2200).contains(year), (1...12).contains(month), hour < 24, minute < 60, second < 60
            else { return nil }
            let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
            let lengths = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
            guard (1...lengths[month - 1]).contains(day) else { return nil }
            let seconds = Self.days(year: year, month: month, day: day) * 86_400 + hour * 3600 + minute * 60 + second
            return Date(timeIntervalSince1970: Double(seconds))
        }
    }

    /// Days from 1970-01-01 to the proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
    static func days(year: Int, month: Int, day: Int) -> Int {
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The proleptic Gregorian date `days` days after 1970-01-01 (Howard Hinnant's
    /// `civil_from_days`).
    static func civil(daysSince1970 days: Int) -> (year: Int, month: Int, day: Int) {
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
