/// A notification text with placeholders that each device fills in (docs/templates.md):
/// `Hello {{first_name | default: "there"}}`.
///
/// A placeholder is `{{`, a name, optionally `| default: "text"`, then `}}`, with spaces
/// allowed between the parts. Names are lower-case letters, digits, `_` and at most one `.`
/// (`first_name`, `attributes.first_name`, `country`); which names a device has is not this
/// type's business (HeraldStore's `PersonalizationField` knows). In a default, `\"` is a quote and
/// `\\` a backslash. `{{` always opens a placeholder: text that is not one is an error, never sent
/// as it is.
public struct TemplateText: Sendable, Hashable {
    /// What a placeholder asks for.
    public struct Placeholder: Sendable, Hashable {
        public var name: String
        /// The text for a device without the value (or whose value is empty); nil when the
        /// placeholder has none.
        public var defaultValue: String?

        public init(name: String, defaultValue: String? = nil) {
            self.name = name
            self.defaultValue = defaultValue
        }
    }

    public enum Part: Sendable, Hashable {
        case literal(String)
        case placeholder(Placeholder)
    }

    public private(set) var parts: [Part]

    /// The most placeholders one text holds.
    public static let maximumPlaceholders = 20
    /// The longest default, in bytes.
    public static let maximumDefaultBytes = 256

    /// Whether `text` holds a placeholder at all (or something that tries to be one): whether
    /// `{{` is in it. Asked of every text of every push the API accepts; a plain scan of the bytes
    /// (the generic `firstRange(of:)` it replaced was 1.3% of herald-api's CPU under
    /// `make bench-api`).
    public static func mayHold(_ text: String) -> Bool {
        var previous: UInt8 = 0
        for byte in text.utf8 {
            if byte == UInt8(ascii: "{"), previous == byte { return true }
            previous = byte
        }
        return false
    }

    /// The placeholders, in order of use (repeats included).
    public var placeholders: [Placeholder] {
        parts.compactMap { if case .placeholder(let placeholder) = $0 { placeholder } else { nil } }
    }

    /// Reads `text`.
    /// - Throws: ``TemplateSyntaxError`` naming the first placeholder that is not one and where
    ///   it starts (a character offset).
    public init(parsing text: String) throws(TemplateSyntaxError) {
        parts = []
        var literal = ""
        var scalars = Array(text.unicodeScalars)[...]
        var offset = 0
        while let first = scalars.first {
            if first == "{", scalars.dropFirst().first == "{" {
                let start = offset
                scalars = scalars.dropFirst(2)
                offset += 2
                let placeholder = try Self.placeholder(&scalars, offset: &offset, start: start)
                if !literal.isEmpty { parts.append(.literal(literal)) }
                literal = ""
                parts.append(.placeholder(placeholder))
                guard
                    parts.count(where: { if case .placeholder = $0 { true } else { false } })
                        <= Self.maximumPlaceholders
                else {
                    throw TemplateSyntaxError(
                        offset: start, message: "a text holds at most \(Self.maximumPlaceholders) placeholders")
                }
                continue
            }
            literal.unicodeScalars.append(first)
            scalars = scalars.dropFirst()
            offset += 1
        }
        if !literal.isEmpty { parts.append(.literal(literal)) }
    }

    private static func placeholder(
        _ scalars: inout ArraySlice<Unicode.Scalar>, offset: inout Int, start: Int
    ) throws(TemplateSyntaxError) -> Placeholder {
        func fail(_ message: String) -> TemplateSyntaxError {
            TemplateSyntaxError(
                offset: start,
                message: "\(message); write a placeholder as {{name}} or {{name | default: \"text\"}}")
        }
        func skipSpaces() {
            while let scalar = scalars.first, scalar == " " {
                scalars = scalars.dropFirst()
                offset += 1
            }
        }
        skipSpaces()
        var name = ""
        while let scalar = scalars.first,
            ("a"..."z").contains(scalar) || ("0"..."9").contains(scalar) || scalar == "_" || scalar == "."
        {
            name.unicodeScalars.append(scalar)
            scalars = scalars.dropFirst()
            offset += 1
        }
        guard Self.isWellFormedName(name) else {
            throw fail(
                name.isEmpty
                    ? "a placeholder needs a name"
                    : "\"\(name)\" is not a placeholder name (lower-case letters, digits, _)"
            )
        }
        skipSpaces()
        var defaultValue: String?
        if scalars.first == "|" {
            scalars = scalars.dropFirst()
            offset += 1
            skipSpaces()
            let keyword = "default:".unicodeScalars
            guard scalars.starts(with: keyword) else { throw fail("after | only default: \"text\" may follow") }
            scalars = scalars.dropFirst(keyword.count)
            offset += keyword.count
            skipSpaces()
            guard scalars.first == "\"" else { throw fail("a default is text in double quotes") }
            scalars = scalars.dropFirst()
            offset += 1
            var text = ""
            var closed = false
            while let scalar = scalars.first {
                scalars = scalars.dropFirst()
                offset += 1
                if scalar == "\\", let next = scalars.first, next == "\"" || next == "\\" {
                    text.unicodeScalars.append(next)
                    scalars = scalars.dropFirst()
                    offset += 1
                } else if scalar == "\"" {
                    closed = true
                    break
                } else {
                    text.unicodeScalars.append(scalar)
                }
            }
            guard closed else { throw fail("the default's closing quote is missing") }
            guard text.utf8.count <= maximumDefaultBytes else {
                throw fail("a default is at most \(maximumDefaultBytes) bytes")
            }
            defaultValue = text
            skipSpaces()
        }
        guard scalars.first == "}", scalars.dropFirst().first == "}" else {
            throw fail("the placeholder is not closed with }}")
        }
        scalars = scalars.dropFirst(2)
        offset += 2
        return Placeholder(name: name, defaultValue: defaultValue)
    }

    /// `name` or `prefix.name`, each starting with a letter.
    static func isWellFormedName(_ name: String) -> Bool {
        let pieces = name.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(pieces.count), name.utf8.count <= 80 else { return false }
        return pieces.allSatisfy { piece in
            guard let first = piece.unicodeScalars.first else { return false }
            return ("a"..."z").contains(first)
        }
    }
}

/// A text that tries to hold a placeholder and does not.
public struct TemplateSyntaxError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Where the broken placeholder starts, in characters (Unicode scalars) from the text's start.
    public var offset: Int
    public var message: String

    public var description: String { "at character \(offset): \(message)" }
}
