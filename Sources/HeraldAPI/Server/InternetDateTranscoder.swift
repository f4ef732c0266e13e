import Foundation
import OpenAPIRuntime

/// Dates in the Open API's bodies: RFC 3339 in UTC to the second (`2026-11-26T11:30:00Z`), as
/// OpenAPIRuntime's default ``ISO8601DateTranscoder`` writes them, written here by arithmetic.
///
/// Every accepted push answers with its `created_at`; Foundation's ISO 8601 formatter took 1.1%
/// of herald-api's CPU under `make bench-api`. Reading a date (a push's `scheduled_at`, a
/// query's bounds) is left to the default transcoder, which accepts what it always accepted.
/// Years outside 1–9999 are written by the default transcoder too.
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

    func decode(_ text: String) throws -> Date { try standard.decode(text) }

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
