import Foundation
import HeraldAPNsVocabulary
import HeraldDomain

/// The SQL of an ``AudienceFilter``: one condition over `devices d` that is never NULL (a device
/// without the attribute fails a comparison, and passes `ne`, `not_in` and `not_exists`), so `not`
/// is a plain `NOT`. Every value is bound (or written as a hex literal for COPY).
extension AudienceRepository {
    static func condition(_ filter: AudienceFilter, app: String, values: inout some AudienceQueryValues) -> String {
        switch filter {
        case .and(let filters):
            return "(" + filters.map { condition($0, app: app, values: &values) }.joined(separator: " AND ") + ")"
        case .or(let filters):
            return "(" + filters.map { condition($0, app: app, values: &values) }.joined(separator: " OR ") + ")"
        case .not(let filter):
            return "(NOT \(condition(filter, app: app, values: &values)))"
        case .condition(let condition):
            // A tag's test is an EXISTS, never NULL: left bare, PostgreSQL can turn one in an
            // `and` into a join with device_tags' (app_id, tag, device_id) index. Wrapped in
            // COALESCE it ran as a look-up per device: 4.9 s for a 16,666-device segment of a
            // million (docs/benchmarks.md, ten million devices).
            if case .tag = condition.attribute { return Self.comparison(condition, app: app, values: &values) }
            return "COALESCE(\(Self.comparison(condition, app: app, values: &values)), false)"
        }
    }

    private static func comparison(
        _ condition: AudienceFilter.Condition, app: String, values: inout some AudienceQueryValues
    ) -> String {
        let op = condition.op
        switch condition.attribute {
        case .text(let attribute):
            let column: String
            var value = condition.value
            switch attribute {
            case .locale: column = "d.locale"
            case .language:
                column = Self.languageSQL
                value = value.map(Self.lowercased)
            case .country:
                column = "d.country"
                value = value.map(Self.uppercased)
            case .timeZone: column = "d.time_zone"
            case .alias: column = "d.alias"
            case .environment: column = "d.environment"
            case .authorizationStatus: column = "d.authorization_status"
            }
            return textComparison(column: column, op: op, value: value, values: &values)
        case .version(let attribute):
            let column = attribute == .appVersion ? "d.app_version" : "d.os_version"
            let key = "d.\(attribute.rawValue)_key"
            switch (op, condition.value) {
            case (.exists, _): return "\(column) IS NOT NULL"
            case (.notExists, _): return "\(column) IS NULL"
            case (.in, .strings(let list)?), (.notIn, .strings(let list)?):
                let keys = values.once(
                    "ARRAY(SELECT herald_version_key(v)::text FROM unnest(\(values.value(list))) AS v)")
                let test = "COALESCE(\(key)::text = ANY(\(keys)::text[]), false)"
                return op == .in ? test : "NOT \(test)"
            case (.ne, .string(let version)?):
                return "\(key) IS DISTINCT FROM \(values.once("herald_version_key(\(values.value(version)))"))"
            case (_, .string(let version)?):
                return "\(key) \(Self.symbol(op)) \(values.once("herald_version_key(\(values.value(version)))"))"
            default: return "false"
            }
        case .time(let attribute):
            let column =
                attribute == .lastSeen ? "d.registered_at" : "COALESCE(d.first_registered_at, d.registered_at)"
            switch (op, condition.value) {
            case (.exists, _): return "true"
            case (.notExists, _): return "false"
            case (.within, .string(let text)?), (.notWithin, .string(let text)?):
                let seconds = AudienceFilter.duration(text) ?? 0
                let since = "now() - \(values.value(Int64(seconds))) * interval '1 second'"
                return op == .within ? "\(column) >= \(since)" : "\(column) < \(since)"
            case (_, .string(let text)?):
                let time = AudienceFilter.timestamp(text).map(DeviceAttributes.timeText) ?? text
                return "\(column) \(Self.symbol(op)) \(values.once("\(values.value(time))::timestamptz"))"
            default: return "false"
            }
        case .tag:
            let has: (String) -> String = { test in
                "EXISTS (SELECT 1 FROM device_tags t WHERE t.app_id = \(app) AND t.device_id = d.id AND \(test))"
            }
            switch (op, condition.value) {
            case (.eq, .string(let tag)?): return has("t.tag = \(Self.constant(tag, &values))")
            case (.ne, .string(let tag)?): return "NOT " + has("t.tag = \(Self.constant(tag, &values))")
            case (.in, .strings(let tags)?): return has("t.tag = ANY(\(Self.constant(tags, &values)))")
            case (.notIn, .strings(let tags)?): return "NOT " + has("t.tag = ANY(\(Self.constant(tags, &values)))")
            default: return "false"
            }
        case .custom(let name):
            let key = Self.constant(name, &values)
            let json = "(d.attributes -> \(key))"
            let text = "(d.attributes ->> \(key))"
            let number = "(CASE WHEN jsonb_typeof(\(json)) = 'number' THEN \(text)::numeric END)"
            let string = "(CASE WHEN jsonb_typeof(\(json)) = 'string' THEN \(text) END) COLLATE \"C\""
            switch (op, condition.value) {
            case (.exists, _): return "d.attributes ? \(key)"
            case (.notExists, _): return "NOT COALESCE(d.attributes ? \(key), false)"
            case (.eq, let value?), (.ne, let value?):
                let contained = JSONValue.object([name: Self.stored(value)]).jsonText
                let test = "COALESCE(d.attributes @> \(values.once("\(values.value(contained))::jsonb")), false)"
                return op == .eq ? test : "NOT \(test)"
            case (.in, .strings(let list)?):
                return "\(string) = ANY(\(Self.constant(list.map(Self.storedText), &values)))"
            case (.notIn, .strings(let list)?):
                return "NOT COALESCE(\(string) = ANY(\(Self.constant(list.map(Self.storedText), &values))), false)"
            case (.in, .numbers(let list)?), (.notIn, .numbers(let list)?):
                let numbers = values.once("\(values.value(list.map(Self.numberText)))::numeric[]")
                let test = "COALESCE(\(number) = ANY(\(numbers)::numeric[]), false)"
                return op == .in ? test : "NOT \(test)"
            case (_, .number(let bound)?):
                return "\(number) \(Self.symbol(op)) \(values.once("\(values.value(Self.numberText(bound)))::numeric"))"
            case (_, .string(let bound)?):
                return "\(string) \(Self.symbol(op)) \(Self.constant(Self.storedText(bound), &values))"
            default: return "false"
            }
        }
    }

    private static func textComparison(
        column: String, op: AudienceFilter.Operator, value: AudienceFilter.Value?,
        values: inout some AudienceQueryValues
    ) -> String {
        switch (op, value) {
        case (.exists, _): return "\(column) IS NOT NULL"
        case (.notExists, _): return "\(column) IS NULL"
        case (.eq, .string(let text)?): return "\(column) = \(Self.constant(text, &values))"
        case (.ne, .string(let text)?): return "\(column) IS DISTINCT FROM \(Self.constant(text, &values))"
        case (.in, .strings(let list)?): return "\(column) = ANY(\(Self.constant(list, &values)))"
        case (.notIn, .strings(let list)?):
            return "NOT COALESCE(\(column) = ANY(\(Self.constant(list, &values))), false)"
        default: return "false"
        }
    }

    /// A text value, computed once per statement (not once per row).
    private static func constant(_ text: String, _ values: inout some AudienceQueryValues) -> String {
        values.once(values.value(text))
    }

    /// A text[] value, computed once per statement.
    private static func constant(_ list: [String], _ values: inout some AudienceQueryValues) -> String {
        values.once(values.value(list)) + "::text[]"
    }

    private static func symbol(_ op: AudienceFilter.Operator) -> String {
        switch op {
        case .lt: "<"
        case .lte: "<="
        case .gt: ">"
        case .gte: ">="
        case .eq: "="
        default: "<>"
        }
    }

    /// A value as custom attributes store it (times normalized).
    private static func stored(_ value: AudienceFilter.Value) -> JSONValue {
        switch value {
        case .string(let text): .string(storedText(text))
        case .number(let number): .number(number)
        case .bool(let flag): .bool(flag)
        case .strings(let list): .array(list.map { .string(storedText($0)) })
        case .numbers(let list): .array(list.map(JSONValue.number))
        }
    }

    private static func storedText(_ text: String) -> String {
        AudienceFilter.timestamp(text).map(DeviceAttributes.timeText) ?? text
    }

    private static func numberText(_ number: Double) -> String {
        number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : "\(number)"
    }

    private static func lowercased(_ value: AudienceFilter.Value) -> AudienceFilter.Value {
        switch value {
        case .string(let text): .string(text.lowercased())
        case .strings(let list): .strings(list.map { $0.lowercased() })
        default: value
        }
    }

    private static func uppercased(_ value: AudienceFilter.Value) -> AudienceFilter.Value {
        switch value {
        case .string(let text): .string(text.uppercased())
        case .strings(let list): .strings(list.map { $0.uppercased() })
        default: value
        }
    }
}
