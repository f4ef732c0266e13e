import Foundation

/// A personalized, localized notification: its payload in a default variant and per locale, with
/// ``TemplateText`` placeholders in the alert's texts (title, subtitle, body, the loc-args),
/// rendered for each device at fan-out (docs/templates.md).
///
/// Compiled once per push: each variant becomes runs of finished JSON bytes between slots, so
/// rendering a device's payload is copying bytes and escaping its values — no JSON encoder per
/// device. Only strings inside `aps.alert` are templates; everything else (sound, custom data)
/// is sent as written.
public struct PayloadTemplate: Sendable {
    /// The distinct placeholder names, in the order the payloads' layout (keys sorted) meets them:
    /// ``render(variant:value:)`` asks for values by index into this.
    public let names: [String]
    /// Whether the push has variants per locale (renders need the device's locale).
    public var isLocalized: Bool { variants.count > 1 }
    /// The locales with a variant of their own (normalized: lower case, `-`), in order.
    public let locales: [String]

    private let variants: [[Segment]]
    /// Normalized locale → variant (0 is the default).
    private let variantByLocale: [String: Int]
    /// For ``maximumRenderedCount(valueLength:)``: the most literal bytes of any variant, and per
    /// name the most slots and the longest fallback any variant gives it.
    @usableFromInline let mostLiteralBytes: Int
    @usableFromInline let mostSlots: [Int]
    @usableFromInline let longestFallback: [Int]

    private enum Segment: Sendable {
        case bytes([UInt8])
        /// The value of `names[index]`, JSON-escaped; `fallback` (already escaped) when the
        /// device has none.
        case slot(index: Int, fallback: [UInt8])
    }

    /// Compiles a default payload and payloads per locale.
    /// - Throws: ``TemplateSyntaxError`` from the first alert text that holds a broken placeholder.
    public init(default base: JSONValue, localized: [String: JSONValue] = [:]) throws(TemplateSyntaxError) {
        var names: [String] = []
        var variants: [[Segment]] = []
        var variantByLocale: [String: Int] = [:]
        let locales = localized.keys.map(Self.normalizedLocale).sorted()
        let byNormalized = Dictionary(localized.map { (Self.normalizedLocale($0.key), $0.value) }) { first, _ in first }
        for payload in [base] + locales.map({ byNormalized[$0]! }) {
            var writer = Writer()
            try writer.write(payload, path: .root, names: &names)
            variants.append(writer.finish())
        }
        for (index, locale) in locales.enumerated() { variantByLocale[locale] = index + 1 }
        self.names = names
        self.locales = locales
        self.variants = variants
        self.variantByLocale = variantByLocale
        var mostLiteralBytes = 0
        var mostSlots = [Int](repeating: 0, count: names.count)
        var longestFallback = [Int](repeating: 0, count: names.count)
        for variant in variants {
            var literal = 0
            var slots = [Int](repeating: 0, count: names.count)
            for segment in variant {
                switch segment {
                case .bytes(let bytes): literal += bytes.count
                case .slot(let index, let fallback):
                    slots[index] += 1
                    longestFallback[index] = max(longestFallback[index], fallback.count)
                }
            }
            mostLiteralBytes = max(mostLiteralBytes, literal)
            for index in slots.indices { mostSlots[index] = max(mostSlots[index], slots[index]) }
        }
        self.mostLiteralBytes = mostLiteralBytes
        self.mostSlots = mostSlots
        self.longestFallback = longestFallback
    }

    /// The stored form (``storedJSON(default:localized:)``) compiled.
    /// - Throws: ``TemplateSyntaxError`` for a broken placeholder, `DecodingError` when `stored`
    ///   is not a stored template.
    public init(stored: [UInt8]) throws {
        let decoded = try JSONDecoder().decode(Stored.self, from: Data(stored))
        try self.init(default: decoded.default, localized: decoded.localized ?? [:])
    }

    private struct Stored: Decodable {
        var `default`: JSONValue
        var localized: [String: JSONValue]?
    }

    /// What a push stores: `{"default": payload, "localized": {"de": payload, …}}`, the payloads
    /// as their encoded bytes (placeholders still in their texts).
    public static func storedJSON(default base: [UInt8], localized: [(locale: String, payload: [UInt8])]) -> [UInt8] {
        var output = Array(#"{"default":"#.utf8)
        output += base
        if !localized.isEmpty {
            output += Array(#","localized":{"#.utf8)
            for (index, variant) in localized.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                JSONWriter.string(variant.locale, to: &output)
                output.append(UInt8(ascii: ":"))
                output += variant.payload
            }
            output.append(UInt8(ascii: "}"))
        }
        output.append(UInt8(ascii: "}"))
        return output
    }

    /// `de_AT`, `DE-at` → `de-at`: how locales are compared.
    public static func normalizedLocale(_ locale: String) -> String {
        String(locale.lowercased().map { $0 == "_" ? "-" : $0 })
    }

    /// The variant for a device of `locale` (UTF-8, as the device registered it): the locale's
    /// own, else its language's, else the default (0).
    public func variant(forLocale locale: some Collection<UInt8>) -> Int {
        guard variants.count > 1, !locale.isEmpty else { return 0 }
        var normalized = ""
        normalized.reserveCapacity(locale.count)
        for byte in locale {
            let lowered = (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte + 32 : byte
            normalized.unicodeScalars.append(Unicode.Scalar(lowered == UInt8(ascii: "_") ? UInt8(ascii: "-") : lowered))
        }
        return variant(forNormalizedLocale: normalized)
    }

    /// The variant for a normalized locale (``normalizedLocale(_:)``).
    public func variant(forNormalizedLocale locale: String) -> Int {
        if let exact = variantByLocale[locale] { return exact }
        if let dash = locale.firstIndex(of: "-"), let language = variantByLocale[String(locale[..<dash])] {
            return language
        }
        return 0
    }

    /// The payload of `variant` for one device: `value(i)` gives the device's value of
    /// `names[i]` (UTF-8; nil or empty for none, which takes the placeholder's default, or
    /// nothing when it has none).
    public func render(variant: Int, value: (Int) -> ArraySlice<UInt8>?) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(512)
        for segment in variants[variant] {
            switch segment {
            case .bytes(let bytes): output.append(contentsOf: bytes)
            case .slot(let index, let fallback):
                if let bytes = value(index), !bytes.isEmpty {
                    JSONWriter.escaped(bytes, to: &output)
                } else {
                    output.append(contentsOf: fallback)
                }
            }
        }
        return output
    }

    /// At least the length of any variant's render for a device whose value of `names[i]` is
    /// `valueLength(i)` bytes long (0: none), without rendering: each slot's value as if every
    /// byte were escaped at its longest (`\u00XX`, six bytes), or its fallback.
    /// Inlinable: the fan-out works it out for every device of a templated push as it cuts batches.
    @inlinable
    public func maximumRenderedCount(valueLength: (Int) -> Int) -> Int {
        var count = mostLiteralBytes
        for index in mostSlots.indices where mostSlots[index] > 0 {
            count += mostSlots[index] * max(6 * valueLength(index), longestFallback[index])
        }
        return count
    }

    /// Every variant rendered for a device with no values (each placeholder's default): the sizes
    /// checked when a push is accepted.
    public func renderedWithDefaults() -> [[UInt8]] {
        variants.indices.map { render(variant: $0, value: { _ in nil }) }
    }

    /// Where in the payload a value is being written: only strings under `aps.alert` are templates.
    private enum Path { case root, aps, alert, other }

    /// Writes a payload as segments (JSONValue's layout: keys sorted).
    private struct Writer {
        var segments: [Segment] = []
        var pending: [UInt8] = []

        mutating func write(_ value: JSONValue, path: Path, names: inout [String]) throws(TemplateSyntaxError) {
            switch value {
            case .string(let text) where path == .alert && TemplateText.mayHold(text):
                let template = try TemplateText(parsing: text)
                pending.append(UInt8(ascii: "\""))
                for part in template.parts {
                    switch part {
                    case .literal(let literal): JSONWriter.escaped(literal.utf8, to: &pending)
                    case .placeholder(let placeholder):
                        let index: Int
                        if let known = names.firstIndex(of: placeholder.name) {
                            index = known
                        } else {
                            names.append(placeholder.name)
                            index = names.count - 1
                        }
                        var fallback: [UInt8] = []
                        if let text = placeholder.defaultValue { JSONWriter.escaped(text.utf8, to: &fallback) }
                        flush()
                        segments.append(.slot(index: index, fallback: fallback))
                    }
                }
                pending.append(UInt8(ascii: "\""))
            case .array(let values):
                pending.append(UInt8(ascii: "["))
                for (index, element) in values.enumerated() {
                    if index > 0 { pending.append(UInt8(ascii: ",")) }
                    try write(element, path: path, names: &names)
                }
                pending.append(UInt8(ascii: "]"))
            case .object(let members):
                pending.append(UInt8(ascii: "{"))
                for (index, key) in members.keys.sorted().enumerated() {
                    if index > 0 { pending.append(UInt8(ascii: ",")) }
                    JSONWriter.string(key, to: &pending)
                    pending.append(UInt8(ascii: ":"))
                    let inner: Path =
                        switch (path, key) {
                        case (.root, "aps"): .aps
                        case (.aps, "alert"), (.alert, _): .alert
                        default: .other
                        }
                    try write(members[key]!, path: inner, names: &names)
                }
                pending.append(UInt8(ascii: "}"))
            default:
                value.write(to: &pending)
            }
        }

        private mutating func flush() {
            guard !pending.isEmpty else { return }
            segments.append(.bytes(pending))
            pending = []
        }

        mutating func finish() -> [Segment] {
            flush()
            return segments
        }
    }
}
