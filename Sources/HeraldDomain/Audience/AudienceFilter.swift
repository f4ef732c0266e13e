import Foundation
import HeraldAPNsVocabulary

/// A condition over what devices say about themselves (docs/segments.md): attributes compared,
/// combined with `and`, `or` and `not`.
///
/// JSON: `{"and": [F, …]}`, `{"or": [F, …]}`, `{"not": F}`, or a condition
/// `{"attribute": "app_version", "op": "gte", "value": "5.2.0"}`.
public indirect enum AudienceFilter: Sendable, Equatable {
    case and([AudienceFilter])
    case or([AudienceFilter])
    case not(AudienceFilter)
    case condition(Condition)

    /// One comparison of one attribute.
    public struct Condition: Sendable, Equatable {
        public var attribute: Attribute
        public var op: Operator
        public var value: Value?

        public init(attribute: Attribute, op: Operator, value: Value? = nil) {
            self.attribute = attribute
            self.op = op
            self.value = value
        }
    }

    /// What a condition compares.
    public enum Attribute: Sendable, Equatable, Hashable {
        /// Text attributes of the device: `locale`, `language` (the locale's first part), `country`,
        /// `time_zone`, `alias`, `environment`, `authorization_status`.
        case text(TextAttribute)
        /// `app_version`, `os_version`: compared as versions (5.10 > 5.9; 5.2 = 5.2.0).
        case version(VersionAttribute)
        /// `last_seen` (the last registration), `first_registered`.
        case time(TimeAttribute)
        /// `tag`: whether the device carries a tag (`eq`, `ne`, `in`, `not_in`).
        case tag
        /// `attributes.<name>`: a custom attribute.
        case custom(String)

        public var name: String {
            switch self {
            case .text(let attribute): attribute.rawValue
            case .version(let attribute): attribute.rawValue
            case .time(let attribute): attribute.rawValue
            case .tag: "tag"
            case .custom(let name): "attributes.\(name)"
            }
        }

        public init?(name: String) {
            if let text = TextAttribute(rawValue: name) {
                self = .text(text)
            } else if let version = VersionAttribute(rawValue: name) {
                self = .version(version)
            } else if let time = TimeAttribute(rawValue: name) {
                self = .time(time)
            } else if name == "tag" {
                self = .tag
            } else if name.hasPrefix("attributes."), DeviceAttributes.isValidName(String(name.dropFirst(11))) {
                self = .custom(String(name.dropFirst(11)))
            } else {
                return nil
            }
        }
    }

    public enum TextAttribute: String, Sendable, CaseIterable {
        case locale, language, country
        case timeZone = "time_zone"
        case alias, environment
        /// What the app reported of the user's notification settings (``AuthorizationStatus``).
        case authorizationStatus = "authorization_status"
    }

    public enum VersionAttribute: String, Sendable, CaseIterable {
        case appVersion = "app_version"
        case osVersion = "os_version"
    }

    public enum TimeAttribute: String, Sendable, CaseIterable {
        case lastSeen = "last_seen"
        case firstRegistered = "first_registered"
    }

    public enum Operator: String, Sendable, CaseIterable {
        case eq, ne, `in`
        case notIn = "not_in"
        case lt, lte, gt, gte, exists
        case notExists = "not_exists"
        /// Times: within the last duration (`"30d"`, `"12h"`, `"90m"`), or longer ago than it.
        case within
        case notWithin = "not_within"
    }

    /// A condition's value as JSON gave it.
    public enum Value: Sendable, Equatable {
        case string(String)
        case number(Double)
        case bool(Bool)
        case strings([String])
        case numbers([Double])
    }

    /// At most this deep (`and`/`or`/`not` inside each other).
    public static let maximumDepth = 5
    /// At most this many conditions in one filter.
    public static let maximumConditions = 50
    /// At most this many values in one `in` or `not_in`.
    public static let maximumListSize = 500

    /// The number of conditions.
    public var conditionCount: Int {
        switch self {
        case .and(let filters), .or(let filters): filters.reduce(0) { $0 + $1.conditionCount }
        case .not(let filter): filter.conditionCount
        case .condition: 1
        }
    }

    var depth: Int {
        switch self {
        case .and(let filters), .or(let filters): 1 + (filters.map(\.depth).max() ?? 0)
        case .not(let filter): 1 + filter.depth
        case .condition: 0
        }
    }
}

/// Why a filter is refused: where in it (a JSON path such as `filter.and[1].value`) and what to fix.
public struct AudienceFilterError: Error, Equatable, CustomStringConvertible {
    public var path: String
    public var message: String

    public init(path: String, message: String) {
        self.path = path
        self.message = message
    }
    public var description: String { "\(path): \(message)" }
}

extension AudienceFilter {
    /// Reads a filter from JSON (the API's request, a stored push or segment), checking its shape,
    /// attributes, operators, values and bounds.
    /// - Throws: ``AudienceFilterError`` naming the first thing wrong.
    public init(json: JSONValue, path: String = "filter") throws(AudienceFilterError) {
        self = try Self.parse(json, path: path)
        guard depth <= Self.maximumDepth else {
            throw AudienceFilterError(path: path, message: "nest and/or/not at most \(Self.maximumDepth) deep")
        }
        guard conditionCount <= Self.maximumConditions else {
            throw AudienceFilterError(path: path, message: "at most \(Self.maximumConditions) conditions in a filter")
        }
    }

    private static func parse(_ json: JSONValue, path: String) throws(AudienceFilterError) -> AudienceFilter {
        guard case .object(let fields) = json else {
            throw AudienceFilterError(path: path, message: "a filter is a JSON object")
        }
        if fields.count == 1, let (key, inner) = fields.first, ["and", "or", "not"].contains(key) {
            if key == "not" { return .not(try parse(inner, path: "\(path).not")) }
            guard case .array(let list) = inner, !list.isEmpty else {
                throw AudienceFilterError(path: "\(path).\(key)", message: "\(key) takes a non-empty list of filters")
            }
            var filters: [AudienceFilter] = []
            for (index, element) in list.enumerated() {
                filters.append(try parse(element, path: "\(path).\(key)[\(index)]"))
            }
            return key == "and" ? .and(filters) : .or(filters)
        }
        let unknown = Set(fields.keys).subtracting(["attribute", "op", "value"])
        guard unknown.isEmpty else {
            throw AudienceFilterError(
                path: path,
                message:
                    "unknown field \(unknown.sorted().joined(separator: ", ")): a filter is {\"and\": […]}, {\"or\": […]}, {\"not\": …} or {\"attribute\", \"op\", \"value\"}"
            )
        }
        guard case .string(let name)? = fields["attribute"] else {
            throw AudienceFilterError(path: "\(path).attribute", message: "name the attribute to compare")
        }
        guard let attribute = Attribute(name: name) else {
            throw AudienceFilterError(
                path: "\(path).attribute",
                message:
                    "unknown attribute \(name): one of locale, language, country, time_zone, alias, environment, authorization_status, app_version, os_version, last_seen, first_registered, tag, or attributes.<name>"
            )
        }
        guard case .string(let opName)? = fields["op"], let op = Operator(rawValue: opName) else {
            throw AudienceFilterError(
                path: "\(path).op",
                message: "op is one of \(Operator.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        let value = try Self.value(fields["value"], path: "\(path).value")
        let condition = Condition(attribute: attribute, op: op, value: value)
        try condition.check(path: path)
        return .condition(condition)
    }

    private static func value(_ json: JSONValue?, path: String) throws(AudienceFilterError) -> Value? {
        switch json {
        case nil, .null?: return nil
        case .bool(let flag)?: return .bool(flag)
        case .number(let number)?: return .number(number)
        case .integer(let number)?: return .number(Double(number))
        case .string(let text)?:
            guard text.utf8.count <= 256 else {
                throw AudienceFilterError(path: path, message: "a string value is at most 256 bytes")
            }
            return .string(text)
        case .array(let list)?:
            guard list.count <= maximumListSize else {
                throw AudienceFilterError(path: path, message: "at most \(maximumListSize) values in a list")
            }
            let strings = list.compactMap {
                if case .string(let text) = $0, text.utf8.count <= 256 { text } else { nil }
            }
            if strings.count == list.count, !list.isEmpty { return .strings(strings) }
            let numbers = list.compactMap(\.numberValue)
            if numbers.count == list.count, !list.isEmpty { return .numbers(numbers) }
            throw AudienceFilterError(
                path: path, message: "a list holds 1 to \(maximumListSize) strings (each at most 256 bytes), or numbers"
            )
        case .object?:
            throw AudienceFilterError(path: path, message: "a value is a string, a number, a boolean or a list")
        }
    }

    /// The filter as JSON (what a push or a segment stores).
    public var json: JSONValue {
        switch self {
        case .and(let filters): .object(["and": .array(filters.map(\.json))])
        case .or(let filters): .object(["or": .array(filters.map(\.json))])
        case .not(let filter): .object(["not": filter.json])
        case .condition(let condition): condition.json
        }
    }
}

extension AudienceFilter.Condition {
    var json: JSONValue {
        var object: [String: JSONValue] = ["attribute": .string(attribute.name), "op": .string(op.rawValue)]
        switch value {
        case .string(let text)?: object["value"] = .string(text)
        case .number(let number)?: object["value"] = .number(number)
        case .bool(let flag)?: object["value"] = .bool(flag)
        case .strings(let list)?: object["value"] = .array(list.map(JSONValue.string))
        case .numbers(let list)?: object["value"] = .array(list.map(JSONValue.number))
        case nil: break
        }
        return .object(object)
    }

    /// Whether the operator suits the attribute and the value the operator.
    func check(path: String) throws(AudienceFilterError) {
        func fail(_ message: String) -> AudienceFilterError {
            AudienceFilterError(path: path, message: "\(attribute.name) \(op.rawValue): \(message)")
        }
        switch op {
        case .exists, .notExists:
            guard value == nil else { throw fail("takes no value") }
            guard attribute != .tag else { throw fail("use eq or ne with tag") }
            return
        case .within, .notWithin:
            guard case .time = attribute, case .string(let text)? = value, AudienceFilter.duration(text) != nil else {
                throw fail(
                    "applies to last_seen and first_registered, with a duration such as \"30d\", \"12h\" or \"90m\"")
            }
            return
        default: break
        }
        switch attribute {
        case .text, .tag:
            switch (op, value) {
            case (.eq, .string?), (.ne, .string?), (.in, .strings?), (.notIn, .strings?): return
            case (.lt, _), (.lte, _), (.gt, _), (.gte, _): throw fail("text compares with eq, ne, in, not_in, exists")
            default: throw fail("eq and ne take a string; in and not_in a list of strings")
            }
        case .version:
            switch (op, value) {
            case (.in, .strings?), (.notIn, .strings?): return
            case (_, .string(let text)?) where AudienceFilter.isVersion(text): return
            default: throw fail("compare with a version such as \"5.2.0\" (in and not_in: a list of versions)")
            }
        case .time:
            guard case .string(let text)? = value, AudienceFilter.timestamp(text) != nil,
                [.lt, .lte, .gt, .gte].contains(op)
            else {
                throw fail("compare with lt, lte, gt, gte and an ISO 8601 time, or use within / not_within")
            }
        case .custom:
            switch (op, value) {
            case (.eq, _?), (.ne, _?): return
            case (.in, .strings?), (.in, .numbers?), (.notIn, .strings?), (.notIn, .numbers?): return
            case (.lt, .number?), (.lte, .number?), (.gt, .number?), (.gte, .number?): return
            case (.lt, .string(let text)?), (.lte, .string(let text)?), (.gt, .string(let text)?),
                (.gte, .string(let text)?):
                guard AudienceFilter.timestamp(text) != nil else {
                    throw fail("lt, lte, gt, gte compare numbers, or times given as ISO 8601 strings")
                }
            default: throw fail("the value does not suit the operator")
            }
        }
    }
}

extension AudienceFilter {
    /// A duration such as `30d`, `12h`, `90m` (1 to 3,650 days), as seconds.
    public static func duration(_ text: String) -> Int? {
        guard let unit = text.last, let amount = Int(text.dropLast()), amount > 0 else { return nil }
        let seconds: Int
        switch unit {
        case "d": seconds = amount * 86_400
        case "h": seconds = amount * 3600
        case "m": seconds = amount * 60
        default: return nil
        }
        return seconds <= 3650 * 86_400 ? seconds : nil
    }

    /// Whether `text` is a version: numbers separated by dots, optionally followed by a suffix
    /// (`5.2.0`, `17.1`, `5.2.0-beta1`).
    public static func isVersion(_ text: String) -> Bool {
        guard (1...32).contains(text.utf8.count), let first = text.first, first.isASCII, first.isNumber else {
            return false
        }
        return text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == "+") }
    }

    /// An ISO 8601 time with a zone (`2026-11-01T00:00:00Z`, with or without fractions).
    public static func timestamp(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text)
    }
}

extension AudienceFilter: Codable {
    public init(from decoder: any Decoder) throws {
        let json = try JSONValue(from: decoder)
        do {
            try self.init(json: json)
        } catch {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: error.description))
        }
    }

    public func encode(to encoder: any Encoder) throws { try json.encode(to: encoder) }
}
