import Foundation

/// The `herald` key Herald adds to every payload it sends, on either road to the phone:
/// `"herald":{"push_id":"<the push's id, lower case>"}` at the payload's top level. The app reads
/// it to show one copy of a push that reached it both over the long connection and through APNs
/// (an app cannot read an APNs apns-id), and engagement events name the push by it.
///
/// The key is Herald's: a push's own data cannot use it, and the payload's limit keeps
/// ``reservedBytes`` for it. herald-center adds it when it cuts a push into batches (so a
/// templated push's every render carries it); a recall's payload is written whole by the Open API
/// (`{"herald":{"push_id":…,"revoke":…}}`) and is left as it is.
public enum HeraldPayloadKey {
    /// The top-level key.
    public static let name = "herald"

    /// The most bytes the key adds to a payload (60): `,"herald":{"push_id":"`, 36, `"}`.
    public static let reservedBytes = Stamp(pushID: UUID()).suffix.count

    /// `payload` (a JSON object's text) with the key added before its closing brace. A payload
    /// that is not an object (never one Herald composed) is returned as it is.
    public static func stamped(_ payload: some Collection<UInt8>, pushID: UUID) -> [UInt8] {
        var bytes = Array(payload)
        Stamp(pushID: pushID).apply(to: &bytes)
        return bytes
    }

    /// One push's key, made once and added to each of its payloads in place (a templated push
    /// adds it to every device's render: no string is made per render).
    public struct Stamp: Sendable {
        /// `"herald":{"push_id":"…"}}`: the key, its object and the payload's closing brace.
        let suffix: [UInt8]

        public init(pushID: UUID) {
            suffix = Array(#""herald":{"push_id":"\#(pushID.uuidString.lowercased())"}}"#.utf8)
        }

        /// Adds the key to `bytes`, a JSON object's text; anything else is left as it is.
        public func apply(to bytes: inout [UInt8]) {
            var end = bytes.count
            while end > 0, bytes[end - 1] == UInt8(ascii: " ") || bytes[end - 1] == UInt8(ascii: "\n") { end -= 1 }
            guard end >= 2, bytes.first == UInt8(ascii: "{"), bytes[end - 1] == UInt8(ascii: "}") else { return }
            let isEmpty = bytes[1..<(end - 1)].allSatisfy { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\n") }
            bytes.removeSubrange((end - 1)...)
            bytes.reserveCapacity(bytes.count + suffix.count + 1)
            if !isEmpty { bytes.append(UInt8(ascii: ",")) }
            bytes.append(contentsOf: suffix)
        }
    }
}
