import HeraldAPNsVocabulary
import HeraldHTTP2

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The header fields APNs looks at, picked out of a request in one pass (the simulator's hot
/// path: one scan instead of a lookup per header, Strings only for values that are present).
struct APNsRequestHeaders {
    enum Authorization {
        case absent
        /// Not `bearer <token>`.
        case malformed
        /// The same token this connection already verified.
        case current
        /// A token this connection has not verified (the raw bytes after `bearer `).
        case new([UInt8])
    }

    var method: Method = .missing
    enum Method { case missing, post, other }
    /// What is wrong with `:path` (nil: a well-formed device path). The token itself is made a
    /// String only when something needs it (``deviceToken(in:)``).
    var pathProblem: APNsReason? = .badPath
    var topic: String?
    var pushType: String?
    var apnsID: String?
    var priority: String?
    var expiration: String?
    var collapseID: String?
    var authorization = Authorization.absent
    /// A header APNs reads appeared more than once.
    var hasDuplicates = false

    /// Reads `fields`; `currentToken` is the provider token the connection verified last.
    init(_ fields: HTTP2HeaderFields, currentToken: [UInt8]) {
        var seen: UInt16 = 0
        fields.forEachField { name, value in
            let bit: UInt16
            switch name.count {
            case 5 where Self.equal(name, ":path"):
                bit = 1 << 0
                pathProblem = APNsRequestRules.problem(withPath: value)
            case 7 where Self.equal(name, ":method"):
                bit = 1 << 1
                method = Self.equal(value, "POST") ? .post : .other
            case 10 where Self.equal(name, "apns-topic"):
                bit = 1 << 2
                topic = String(decoding: value, as: UTF8.self)
            case 7 where Self.equal(name, "apns-id"):
                bit = 1 << 3
                apnsID = String(decoding: value, as: UTF8.self)
            case 14 where Self.equal(name, "apns-push-type"):
                bit = 1 << 4
                pushType = String(decoding: value, as: UTF8.self)
            case 13 where Self.equal(name, "apns-priority"):
                bit = 1 << 5
                priority = String(decoding: value, as: UTF8.self)
            case 15 where Self.equal(name, "apns-expiration"):
                bit = 1 << 6
                expiration = String(decoding: value, as: UTF8.self)
            case 16 where Self.equal(name, "apns-collapse-id"):
                bit = 1 << 7
                collapseID = String(decoding: value, as: UTF8.self)
            case 13 where Self.equal(name, "authorization"):
                bit = 1 << 8
                authorization = Self.authorization(value, currentToken: currentToken)
            default:
                return
            }
            if seen & bit != 0 { hasDuplicates = true }
            seen |= bit
        }
    }

    /// The request's device token, lower-cased (call only when ``pathProblem`` is nil).
    static func deviceToken(in fields: HTTP2HeaderFields) -> String {
        (try? fields.withValueBytes(of: ":path", APNsRequestRules.deviceToken(fromPath:)).get()) ?? ""
    }

    private static func authorization(_ value: UnsafeRawBufferPointer, currentToken: [UInt8]) -> Authorization {
        // "bearer " in any case, then the token.
        guard value.count > 7, value[0] | 0x20 == UInt8(ascii: "b"), value[1] | 0x20 == UInt8(ascii: "e"),
            value[2] | 0x20 == UInt8(ascii: "a"), value[3] | 0x20 == UInt8(ascii: "r"),
            value[4] | 0x20 == UInt8(ascii: "e"), value[5] | 0x20 == UInt8(ascii: "r"), value[6] == UInt8(ascii: " ")
        else { return .malformed }
        let token = UnsafeRawBufferPointer(rebasing: value[7...])
        let matches =
            token.count == currentToken.count
            && currentToken.withUnsafeBytes { current in
                memcmp(current.baseAddress!, token.baseAddress!, token.count) == 0
            }
        return matches ? .current : .new(Array(token))
    }

    @inline(__always)
    private static func equal(_ bytes: UnsafeRawBufferPointer, _ text: StaticString) -> Bool {
        guard bytes.count == text.utf8CodeUnitCount else { return false }
        return memcmp(bytes.baseAddress!, text.utf8Start, bytes.count) == 0
    }
}
