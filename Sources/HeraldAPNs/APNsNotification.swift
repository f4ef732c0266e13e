import Crypto
import Foundation
import HeraldHTTP2
import NIOCore

/// One notification to one device, ready to send.
///
/// A value like any other, held in one immutable box: copying a notification (the sender does
/// a few times per send) retains the box alone, not each of its strings and its payload — which
/// the notifications of a batch share, so their reference counts were contended between the
/// event loops. Changing a field makes a new box.
public struct APNsNotification: Sendable, Hashable {
    private struct Fields: Sendable, Hashable {
        var deviceToken: String
        var topic: String
        var pushType: APNsPushType
        var priority: APNsPriority
        var expiration: Int64?
        var collapseID: String?
        var apnsID: String?
        var payload: ByteBuffer
    }

    private final class Box: Sendable {
        let fields: Fields
        init(_ fields: Fields) { self.fields = fields }
    }

    private var box: Box

    /// The device token in hex (any even length).
    public var deviceToken: String {
        get { box.fields.deviceToken }
        set { change { $0.deviceToken = newValue } }
    }
    /// `apns-topic`: the bundle id with the push type's suffix (``APNsPushType/topic(forBundleID:)``).
    public var topic: String {
        get { box.fields.topic }
        set { change { $0.topic = newValue } }
    }
    public var pushType: APNsPushType {
        get { box.fields.pushType }
        set { change { $0.pushType = newValue } }
    }
    public var priority: APNsPriority {
        get { box.fields.priority }
        set { change { $0.priority = newValue } }
    }
    /// `apns-expiration`: seconds since 1970 after which APNs stops trying; 0 means deliver
    /// once or never; nil leaves it to APNs (it stores and retries for a while).
    public var expiration: Int64? {
        get { box.fields.expiration }
        set { change { $0.expiration = newValue } }
    }
    /// `apns-collapse-id` (at most 64 bytes): a later notification with the same id replaces
    /// this one on the device.
    public var collapseID: String? {
        get { box.fields.collapseID }
        set { change { $0.collapseID = newValue } }
    }
    /// `apns-id`, a UUID; Herald sets a deterministic one (``deterministicID(pushID:deviceID:)``)
    /// so a notification sent twice is recognisably the same.
    public var apnsID: String? {
        get { box.fields.apnsID }
        set { change { $0.apnsID = newValue } }
    }
    /// The encoded payload (``APNsPayload/validated(for:)``). Held as a `ByteBuffer` so that the
    /// notifications of one push share one copy of it.
    public var payload: ByteBuffer {
        get { box.fields.payload }
        set { change { $0.payload = newValue } }
    }

    private mutating func change(_ body: (inout Fields) -> Void) {
        var fields = box.fields
        body(&fields)
        box = Box(fields)
    }

    public static func == (lhs: APNsNotification, rhs: APNsNotification) -> Bool {
        lhs.box === rhs.box || lhs.box.fields == rhs.box.fields
    }

    public func hash(into hasher: inout Hasher) {
        box.fields.hash(into: &hasher)
    }

    public init(
        deviceToken: String, topic: String, pushType: APNsPushType = .alert, priority: APNsPriority? = nil,
        expiration: Int64? = nil, collapseID: String? = nil, apnsID: String? = nil, payload: [UInt8]
    ) {
        self.init(
            deviceToken: deviceToken, topic: topic, pushType: pushType, priority: priority, expiration: expiration,
            collapseID: collapseID, apnsID: apnsID, payload: ByteBuffer(bytes: payload))
    }

    /// The same, with the payload already in a buffer (shared, not copied).
    public init(
        deviceToken: String, topic: String, pushType: APNsPushType = .alert, priority: APNsPriority? = nil,
        expiration: Int64? = nil, collapseID: String? = nil, apnsID: String? = nil, payload: ByteBuffer
    ) {
        box = Box(
            Fields(
                deviceToken: deviceToken, topic: topic, pushType: pushType,
                priority: priority ?? pushType.defaultPriority, expiration: expiration, collapseID: collapseID,
                apnsID: apnsID, payload: payload))
    }

    /// A name-based (version 5) UUID of a push and a device: the same pair always gives the
    /// same `apns-id`.
    public static func deterministicID(pushID: UUID, deviceID: Int64) -> String {
        // RFC 9562 §5.5: SHA-1 over a namespace and the name; the push id is the namespace.
        // The name's 24 bytes on the stack (this runs once per notification sent).
        var input = (pushID.uuid, deviceID.bigEndian)
        let digest = withUnsafeBytes(of: &input) { Insecure.SHA1.hash(data: $0) }
        var bytes = digest.withUnsafeBytes { digest in
            (digest.loadUnaligned(as: UInt64.self), digest.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        }
        // Formatted by hand (Foundation's uuidString goes through printf): 8-4-4-4-12, upper case.
        let digits: StaticString = "0123456789ABCDEF"
        return withUnsafeMutableBytes(of: &bytes) { bytes in
            bytes[6] = (bytes[6] & 0x0F) | 0x50
            bytes[8] = (bytes[8] & 0x3F) | 0x80
            return String(unsafeUninitializedCapacity: 36) { text in
                var position = 0
                for (index, byte) in bytes.enumerated() {
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        text[position] = UInt8(ascii: "-")
                        position += 1
                    }
                    text[position] = digits.utf8Start[Int(byte >> 4)]
                    text[position + 1] = digits.utf8Start[Int(byte & 0x0F)]
                    position += 2
                }
                return 36
            }
        }
    }

    /// Why this notification cannot be sent as it is, or nil. Checked before sending, so a
    /// mistake costs no round trip to Apple.
    public var problem: String? {
        if !Self.isEvenHex(deviceToken) {
            return "the device token must be hex of even length"
        }
        if payload.readableBytes == 0 { return "the payload is empty" }
        if payload.readableBytes > pushType.maximumPayloadBytes {
            return
                "the payload is \(payload.readableBytes) bytes; \(pushType.rawValue) notifications take at most \(pushType.maximumPayloadBytes)"
        }
        if !pushType.allows(priority) {
            return
                "\(pushType.rawValue) notifications take priority \(pushType.allowedPriorities.map(\.rawValue).sorted()), not \(priority.rawValue)"
        }
        if let collapseID, collapseID.utf8.count > 64 { return "the collapse id is over 64 bytes" }
        return nil
    }

    /// Whether `token` is hex digits of even, non-zero length. Checked for every notification
    /// sent, so the bytes are read through a pointer of a concrete type (the `UTF8View`'s
    /// iterator cost 3% of the sender's CPU under `make bench-sender`, a generic check over the
    /// contiguous bytes still 0.7% of the machine under `make bench-e2e`).
    static func isEvenHex(_ token: String) -> Bool {
        var token = token
        return token.withUTF8 { bytes in
            !bytes.isEmpty && bytes.count % 2 == 0 && bytes.allSatisfy(Hexadecimal.isDigit)
        }
    }

    /// Writes the request for this notification into `block` and returns its body: the one
    /// definition of what an APNs request carries, for single and batched sends alike.
    func writeRequest(authority: String, authorization: String?, into block: inout HTTP2HeaderBlock) -> ByteBuffer {
        // Never indexed, as Apple asks of `:path`, `authorization` and `apns-id`: each either
        // differs on every request or is a secret, and indexing them would only push the shared
        // fields out of APNs' small HPACK table.
        block.addRequestPseudoHeaders(
            method: "POST", scheme: "https", authority: authority, pathPrefix: "/3/device/", path: deviceToken,
            pathNeverIndexed: true)
        if let authorization { block.add("authorization", authorization, neverIndexed: true) }
        block.add("apns-topic", topic)
        block.add("apns-push-type", pushType.rawValue)
        block.add("apns-priority", String(priority.rawValue))
        if let expiration { block.add("apns-expiration", String(expiration)) }
        if let collapseID { block.add("apns-collapse-id", collapseID) }
        if let apnsID { block.add("apns-id", apnsID, neverIndexed: true) }
        return payload
    }
}
