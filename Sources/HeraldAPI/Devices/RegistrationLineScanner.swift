import HeraldAPIContract

/// Reads the common shape of an import's NDJSON line straight from its bytes: one flat object
/// whose values are plain strings, `null`, or (for `tags`) an array of plain strings.
///
/// Decoding such a line with `JSONDecoder` into the contract's type cost most of an import's
/// parsing time (issue 22, docs/benchmarks.md#import); this reads it in one pass. It never
/// decides that a line is wrong: for anything else — an escape or a byte outside printable ASCII
/// in a string, `attributes`, a number or a nested object, a key it does not know or a key twice,
/// an environment that is neither `production` nor `sandbox`, a missing `token` or
/// `environment`, bytes after the object — it answers nil and the caller decodes the line with
/// `JSONDecoder`, which reads every JSON and words every error. Where it answers, the answer is
/// the one `JSONDecoder` gives (a test compares both on generated lines).
enum RegistrationLineScanner {
    private enum Key: Int, CaseIterable {
        case token, environment, topic, alias, aliasSignature, tags, locale, timeZone, country, appVersion,
            osVersion

        /// The key's name as JSON spells it (the contract's coding keys).
        var name: StaticString {
            switch self {
            case .token: "token"
            case .environment: "environment"
            case .topic: "topic"
            case .alias: "alias"
            case .aliasSignature: "alias_signature"
            case .tags: "tags"
            case .locale: "locale"
            case .timeZone: "time_zone"
            case .country: "country"
            case .appVersion: "app_version"
            case .osVersion: "os_version"
            }
        }

        /// The key whose name is `bytes`, or nil.
        static func named(_ bytes: UnsafeBufferPointer<UInt8>) -> Key? {
            allCases.first { key in
                let name = key.name
                return UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount).elementsEqual(bytes)
            }
        }
    }

    /// The line's registration, or nil when `JSONDecoder` must read it.
    static func scan(_ line: ArraySlice<UInt8>) -> Components.Schemas.DeviceRegistration? {
        line.withUnsafeBufferPointer { bytes in
            var reader = Reader(bytes: bytes)
            return reader.registration()
        }
    }

    /// The scan's position in the line. Every method returns nil (or false) at the first byte
    /// outside the shape it reads.
    private struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        init(bytes: UnsafeBufferPointer<UInt8>) {
            self.bytes = bytes
        }

        mutating func registration() -> Components.Schemas.DeviceRegistration? {
            var strings = [String?](repeating: nil, count: Key.allCases.count)
            var tags: [String]?
            var seen = 0
            guard take(UInt8(ascii: "{")) else { return nil }
            if take(UInt8(ascii: "}")) { return nil }
            repeat {
                guard let name = plainString(), let key = Key.named(name), seen & (1 << key.rawValue) == 0,
                    take(UInt8(ascii: ":"))
                else { return nil }
                seen |= 1 << key.rawValue
                if takeNull() { continue }
                if key == .tags {
                    guard let array = stringArray() else { return nil }
                    tags = array
                } else {
                    guard let value = plainString() else { return nil }
                    strings[key.rawValue] = String(decoding: value, as: UTF8.self)
                }
            } while take(UInt8(ascii: ","))
            guard take(UInt8(ascii: "}")) else { return nil }
            skipWhitespace()
            guard index == bytes.count, let token = strings[Key.token.rawValue],
                let environment = strings[Key.environment.rawValue].flatMap(Components.Schemas.Environment.init)
            else { return nil }
            return Components.Schemas.DeviceRegistration(
                token: token, environment: environment, topic: strings[Key.topic.rawValue],
                alias: strings[Key.alias.rawValue], aliasSignature: strings[Key.aliasSignature.rawValue], tags: tags,
                locale: strings[Key.locale.rawValue], timeZone: strings[Key.timeZone.rawValue],
                country: strings[Key.country.rawValue], appVersion: strings[Key.appVersion.rawValue],
                osVersion: strings[Key.osVersion.rawValue])
        }

        /// `[` plain strings separated by commas `]`, or `[]`.
        mutating func stringArray() -> [String]? {
            guard take(UInt8(ascii: "[")) else { return nil }
            var values: [String] = []
            if take(UInt8(ascii: "]")) { return values }
            repeat {
                guard let value = plainString() else { return nil }
                values.append(String(decoding: value, as: UTF8.self))
            } while take(UInt8(ascii: ","))
            return take(UInt8(ascii: "]")) ? values : nil
        }

        /// A string of printable ASCII without a backslash, after any white space: its bytes
        /// between the quotes.
        mutating func plainString() -> UnsafeBufferPointer<UInt8>? {
            guard take(UInt8(ascii: "\"")) else { return nil }
            let start = index
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    index += 1
                    return UnsafeBufferPointer(rebasing: bytes[start..<index - 1])
                }
                guard byte >= 0x20, byte < 0x7F, byte != UInt8(ascii: "\\") else { return nil }
                index += 1
            }
            return nil
        }

        /// `null`, after any white space.
        mutating func takeNull() -> Bool {
            skipWhitespace()
            guard bytes.count - index >= 4, bytes[index] == UInt8(ascii: "n"), bytes[index + 1] == UInt8(ascii: "u"),
                bytes[index + 2] == UInt8(ascii: "l"), bytes[index + 3] == UInt8(ascii: "l")
            else { return false }
            index += 4
            return true
        }

        /// `byte`, after any white space.
        mutating func take(_ byte: UInt8) -> Bool {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        mutating func skipWhitespace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }
    }
}
