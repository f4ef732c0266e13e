/// A JSON value for custom payload keys and Live Activity content state, written by Herald's
/// own small encoder (no Foundation on the hot path; keys in sorted order, so equal payloads
/// are equal bytes).
public indirect enum APNsJSON: Sendable, Hashable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByFloatLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    case string(String)
    case integer(Int)
    case number(Double)
    case bool(Bool)
    case null
    case array([APNsJSON])
    case object([String: APNsJSON])

    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .integer(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(arrayLiteral elements: APNsJSON...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, APNsJSON)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
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

        mutating func field(_ name: String, _ value: APNsJSON) {
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
