import Foundation

/// Any JSON value, the one type Herald has for it: custom payload keys and Live Activity content
/// state (written by Herald's own small encoder, ``write(to:)``: no Foundation on the hot path,
/// keys in sorted order, so one value is always the same bytes), and device attributes and
/// audience filters (decoded with their exact type: a boolean never reads as a number). A number
/// without a fraction that fits an `Int` decodes as `integer`, any other as `number`; the two are
/// equal when they are exactly the same number (`5` and `5.0`, never `2⁵³ + 1` and `2⁵³`), and a
/// NaN is equal to itself, so `==` is an equivalence and `Set` and `Dictionary` can rely on it.
public indirect enum JSONValue: Sendable, Hashable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByFloatLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    case string(String)
    case integer(Int)
    case number(Double)
    case bool(Bool)
    case null
    case array([JSONValue])
    case object([String: JSONValue])

    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .integer(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }

    /// The value of `integer` or `number`, as a `Double`; nil for anything else.
    public var numberValue: Double? {
        switch self {
        case .integer(let value): Double(value)
        case .number(let value): value
        default: nil
        }
    }

    public static func == (left: JSONValue, right: JSONValue) -> Bool {
        switch (left, right) {
        case (.string(let a), .string(let b)): a == b
        case (.integer(let a), .integer(let b)): a == b
        case (.integer(let a), .number(let b)), (.number(let b), .integer(let a)): Int(exactly: b) == a
        case (.number(let a), .number(let b)): a == b || (a.isNaN && b.isNaN)
        case (.bool(let a), .bool(let b)): a == b
        case (.null, .null): true
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)): a == b
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .string(let text):
            hasher.combine(0)
            hasher.combine(text)
        // An integral number hashes as the integer it equals; any other by its value.
        case .integer(let value):
            hasher.combine(1)
            hasher.combine(value)
        case .number(let value):
            if let integral = Int(exactly: value) {
                hasher.combine(1)
                hasher.combine(integral)
            } else if value.isNaN {
                hasher.combine(6)
            } else {
                hasher.combine(7)
                hasher.combine(value)
            }
        case .bool(let flag):
            hasher.combine(2)
            hasher.combine(flag)
        case .null: hasher.combine(3)
        case .array(let values):
            hasher.combine(4)
            hasher.combine(values)
        case .object(let members):
            hasher.combine(5)
            hasher.combine(members)
        }
    }

    /// Reads JSON text.
    public init(jsonText: String) throws {
        self = try JSONDecoder().decode(JSONValue.self, from: Data(jsonText.utf8))
    }

    /// As JSON text, keys sorted (Foundation's encoder: for storing, not for payloads).
    public var jsonText: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? String(decoding: encoder.encode(self), as: UTF8.self)) ?? "null"
    }

    /// Appends this value's JSON text to `output`.
    public func write(to output: inout [UInt8]) {
        switch self {
        case .string(let text): JSONWriter.string(text, to: &output)
        case .integer(let value): output.append(contentsOf: String(value).utf8)
        case .number(let value):
            if value.isFinite {
                output.append(
                    contentsOf: (value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value))
                        .utf8)
            } else {
                output.append(contentsOf: "null".utf8)  // JSON has no NaN or infinity
            }
        case .bool(let value): output.append(contentsOf: (value ? "true" : "false").utf8)
        case .null: output.append(contentsOf: "null".utf8)
        case .array(let values):
            output.append(UInt8(ascii: "["))
            for (index, value) in values.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                value.write(to: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let members):
            var object = JSONWriter.Object(output: output)
            for key in members.keys.sorted() { object.field(key, members[key]!) }
            output = object.finish()
        }
    }
}

/// Writes JSON text into a byte array.
enum JSONWriter {
    /// An object being written: `{`, then fields separated by commas, then `}`.
    struct Object {
        var output: [UInt8]
        private var first = true

        init(output: [UInt8]) {
            self.output = output
            self.output.append(UInt8(ascii: "{"))
        }

        private mutating func key(_ key: String) {
            if !first { output.append(UInt8(ascii: ",")) }
            first = false
            JSONWriter.string(key, to: &output)
            output.append(UInt8(ascii: ":"))
        }

        mutating func field(_ name: String, _ value: JSONValue) {
            key(name)
            value.write(to: &output)
        }

        mutating func field(_ name: String, _ value: String?) {
            guard let value else { return }
            key(name)
            JSONWriter.string(value, to: &output)
        }

        mutating func field(_ name: String, _ value: Int?) {
            guard let value else { return }
            key(name)
            output.append(contentsOf: String(value).utf8)
        }

        mutating func field(_ name: String, _ values: [String]?) {
            guard let values else { return }
            field(name, .array(values.map { .string($0) }))
        }

        /// Writes a nested object's members with `body`.
        mutating func object(_ name: String, _ body: (inout Object) -> Void) {
            key(name)
            var nested = Object(output: output)
            output = []
            body(&nested)
            output = nested.finish()
        }

        consuming func finish() -> [UInt8] {
            output.append(UInt8(ascii: "}"))
            return output
        }
    }

    static func string(_ text: String, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        escaped(text.utf8, to: &output)
        output.append(UInt8(ascii: "\""))
    }

    /// Appends `bytes` (UTF-8 text) as the inside of a JSON string: quotes, backslashes and
    /// control characters escaped, everything else as it is.
    static func escaped(_ bytes: some Sequence<UInt8>, to output: inout [UInt8]) {
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "\""): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x0A: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0..<0x20:
                output.append(contentsOf: [
                    UInt8(ascii: "\\"), UInt8(ascii: "u"), 48, 48,
                    Hexadecimal.digit(byte >> 4), Hexadecimal.digit(byte & 0xF),
                ])
            default: output.append(byte)
            }
        }
    }
}

extension JSONValue: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let flag = try? container.decode(Bool.self) {
            self = .bool(flag)
        } else if let integer = try? container.decode(Int.self) {
            self = .integer(integer)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let text = try? container.decode(String.self) {
            self = .string(text)
        } else if let values = try? container.decode([JSONValue].self) {
            self = .array(values)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let flag): try container.encode(flag)
        case .integer(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let text): try container.encode(text)
        case .array(let values): try container.encode(values)
        case .object(let members): try container.encode(members)
        }
    }
}
