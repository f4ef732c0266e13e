import Foundation
import HeraldAPNsVocabulary

/// A device's custom attributes (docs/segments.md): names of lower-case letters, digits and `_`
/// (starting with a letter, at most 64), values a string, a number, a boolean, or a time given as an
/// ISO 8601 string (kept in UTC with milliseconds, so times compare in order as text).
public enum DeviceAttributes {
    /// At most this many attributes a device.
    public static let maximumCount = 50
    /// At most this many bytes of text a string value.
    public static let maximumValueBytes = 256
    /// At most this many bytes as stored JSON.
    public static let maximumBytes = 2048

    public static func isValidName(_ name: String) -> Bool {
        guard (1...64).contains(name.utf8.count), let first = name.unicodeScalars.first,
            ("a"..."z").contains(first)
        else { return false }
        return name.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" }
    }

    /// Why attributes are refused: which one and what to fix.
    public struct Invalid: Error, Equatable {
        public var name: String?
        public var message: String
    }

    /// The attributes as stored: checked, times normalized; a null value removes the attribute
    /// (returned in `removed`).
    public static func normalized(_ fields: [String: JSONValue]) throws(Invalid) -> (
        set: [String: JSONValue], removed: [String]
    ) {
        guard fields.count <= maximumCount else {
            throw Invalid(name: nil, message: "at most \(maximumCount) custom attributes a device")
        }
        var set: [String: JSONValue] = [:]
        var removed: [String] = []
        for (name, value) in fields {
            guard isValidName(name) else {
                throw Invalid(
                    name: name, message: "names are 1 to 64 lower-case letters, digits and _, starting with a letter")
            }
            switch value {
            case .null: removed.append(name)
            case .bool, .integer, .number: set[name] = value
            case .string(let text):
                guard text.utf8.count <= maximumValueBytes else {
                    throw Invalid(name: name, message: "a string is at most \(maximumValueBytes) bytes")
                }
                set[name] = .string(AudienceFilter.timestamp(text).map(Self.timeText) ?? text)
            case .array, .object:
                throw Invalid(name: name, message: "a value is a string, a number, a boolean or an ISO 8601 time")
            }
        }
        guard JSONValue.object(set).jsonText.utf8.count <= maximumBytes else {
            throw Invalid(name: nil, message: "custom attributes are at most \(maximumBytes) bytes as JSON")
        }
        return (set, removed.sorted())
    }

    /// A time as attributes keep it: UTC, milliseconds, `Z` (ordered as text).
    public static func timeText(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: date)
    }
}
