import HeraldAPNsVocabulary

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Apple's rules for the request line and headers of `POST /3/device/<token>`, as pure
/// functions (unit-tested without sockets).
enum APNsRequestRules {
    /// Checks `:path` without making the token a String.
    /// - Returns: nil when it is `/3/device/<hex of even length>`, else the reason it is refused.
    static func problem(withPath path: UnsafeRawBufferPointer?) -> APNsReason? {
        let prefix: StaticString = "/3/device/"
        let prefixLength = prefix.utf8CodeUnitCount
        guard let path, path.count >= prefixLength, memcmp(path.baseAddress!, prefix.utf8Start, prefixLength) == 0
        else {
            return .badPath
        }
        let tokenLength = path.count - prefixLength
        var badDigit = false
        for index in prefixLength..<path.count {
            let byte = path[index]
            if byte == UInt8(ascii: "/") { return .badPath }
            badDigit = badDigit || !Hexadecimal.isDigit(byte)
        }
        if tokenLength == 0 { return .missingDeviceToken }
        return badDigit || tokenLength % 2 != 0 ? .badDeviceToken : nil
    }

    /// The device token's hex digits in a `:path` that ``problem(withPath:)`` found none in.
    static func tokenDigits(inCheckedPath path: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: path.dropFirst("/3/device/".utf8.count))
    }

    /// Splits `:path` into the device token, lower-cased.
    /// - Returns: the token, or the reason the path is refused (BadPath, MissingDeviceToken,
    ///   BadDeviceToken).
    static func deviceToken(fromPath path: UnsafeRawBufferPointer?) -> Result<String, APNsReason> {
        // Tokens are hex of even length; their length is not fixed (Apple has said tokens may grow).
        if let problem = problem(withPath: path) { return .failure(problem) }
        let token = tokenDigits(inCheckedPath: path!)
        // Lower-cased straight into the String's storage: one allocation.
        return .success(
            String(unsafeUninitializedCapacity: token.count) { text in
                for (index, byte) in token.enumerated() { text[index] = byte >= 65 && byte <= 70 ? byte + 32 : byte }
                return token.count
            })
    }

    /// Whether `topic` is a syntactically valid bundle id (letters, digits, `.`, `-`, `_`).
    static func isWellFormedTopic(_ topic: String) -> Bool {
        guard !topic.isEmpty, topic.utf8.count <= 255 else { return false }
        return topic.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: "_"):
                true
            default: false
            }
        }
    }

    /// The push type named by `apns-push-type` (alert when absent), and the app's bundle id once
    /// the push type's topic suffix is removed.
    /// - Returns: InvalidPushType when the value is unknown or the topic lacks the suffix.
    static func pushType(_ value: String?, topic: String) -> Result<(APNsPushType, appTopic: Substring), APNsReason> {
        guard let pushType = APNsPushType(rawValue: value ?? "alert") else { return .failure(.invalidPushType) }
        guard let suffix = pushType.topicSuffix else { return .success((pushType, topic[...])) }
        guard topic.hasSuffix(suffix), topic.count > suffix.count else { return .failure(.invalidPushType) }
        return .success((pushType, topic.dropLast(suffix.count)))
    }

    /// Whether `value` is a UUID in its canonical 8-4-4-4-12 form (either case).
    static func isUUID(_ value: String) -> Bool {
        // Read in place: no copy of the bytes per request.
        var value = value
        return value.withUTF8 { bytes in
            guard bytes.count == 36 else { return false }
            for (index, byte) in bytes.enumerated() {
                if index == 8 || index == 13 || index == 18 || index == 23 {
                    if byte != UInt8(ascii: "-") { return false }
                } else if !Hexadecimal.isDigit(byte) {
                    return false
                }
            }
            return true
        }
    }

    /// `apns-priority`: 10, 5 or 1.
    static func priority(_ value: String?) -> Result<Int, APNsReason> {
        guard let value else { return .success(10) }
        guard let priority = Int(value), [10, 5, 1].contains(priority) else { return .failure(.badPriority) }
        return .success(priority)
    }

    /// `apns-expiration`: a UNIX time in seconds, 0 meaning "deliver once".
    static func expiration(_ value: String?) -> Result<Int64?, APNsReason> {
        guard let value else { return .success(nil) }
        guard let expiration = Int64(value), expiration >= 0 else { return .failure(.badExpirationDate) }
        return .success(expiration)
    }
}
