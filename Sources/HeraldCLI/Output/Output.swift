import ArgumentParser
import Foundation

/// `--json`: every command that prints data prints the API's answer as JSON instead of lines
/// for people (keys sorted, times in ISO 8601), for scripts.
struct OutputOptions: ParsableArguments {
    @Flag(help: "Print the API's answer as JSON (for scripts).") var json = false

    /// Prints `value` as JSON when `--json` was given, else the lines `text` makes.
    func print<Value: Encodable>(_ value: Value, _ text: (Value) -> String) throws {
        if json {
            Swift.print(try Output.json(value))
        } else {
            let lines = text(value)
            if !lines.isEmpty { Swift.print(lines) }
        }
    }
}

enum Output {
    /// `value` as JSON with sorted keys and ISO 8601 times: pretty, or on one line (`pretty:
    /// false`, for a stream of records).
    static func json<Value: Encodable>(_ value: Value, pretty: Bool = true) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting =
            pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// A decoder for herald-api's JSON: times in ISO 8601, with or without fractions.
    static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let text = try decoder.singleValueContainer().decode(String.self)
            guard let date = date(text) else {
                throw DecodingError.dataCorrupted(
                    .init(codingPath: decoder.codingPath, debugDescription: "not an ISO 8601 time: \(text)"))
            }
            return date
        }
        return decoder
    }

    /// An ISO 8601 time, with or without fractional seconds (herald-api writes whole seconds;
    /// a person may type either).
    static func date(_ text: String) -> Date? {
        (try? Date(text, strategy: .iso8601))
            ?? (try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text))
    }

    /// `value` with thousands separators: 1,234,567.
    static func count(_ value: some BinaryInteger) -> String {
        let digits = String(value)
        var result = ""
        for (index, character) in digits.reversed().enumerated() {
            if index > 0, index % 3 == 0, character != "-" { result.append(",") }
            result.append(character)
        }
        return String(result.reversed())
    }

    /// A time as the API shows it.
    static func time(_ date: Date?) -> String {
        guard let date else { return "-" }
        return date.formatted(.iso8601)
    }
}
