import Crypto
import Foundation
import HeraldAPNsVocabulary
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
        var shared: APNsSharedFields
        var deviceToken: String
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
    /// Every field but the device token, the `apns-id` and the payload.
    public var shared: APNsSharedFields {
        get { box.fields.shared }
        set { change { $0.shared = newValue } }
    }
    /// `apns-topic` (``APNsSharedFields/topic``).
    public var topic: String {
        get { box.fields.shared.topic }
        set { change { $0.shared.topic = newValue } }
    }
    public var pushType: APNsPushType {
        get { box.fields.shared.pushType }
        set { change { $0.shared.pushType = newValue } }
    }
    public var priority: APNsPriority {
        get { box.fields.shared.priority }
        set { change { $0.shared.priority = newValue } }
    }
    /// `apns-expiration` (``APNsSharedFields/expiration``).
    public var expiration: Int64? {
        get { box.fields.shared.expiration }
        set { change { $0.shared.expiration = newValue } }
    }
    /// `apns-collapse-id` (``APNsSharedFields/collapseID``).
    public var collapseID: String? {
        get { box.fields.shared.collapseID }
        set { change { $0.shared.collapseID = newValue } }
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
        self.init(
            deviceToken: deviceToken,
            shared: APNsSharedFields(
                topic: topic, pushType: pushType, priority: priority, expiration: expiration, collapseID: collapseID),
            apnsID: apnsID, payload: payload)
    }

    /// A notification made of the fields a push shares and the device's own.
    public init(deviceToken: String, shared: APNsSharedFields, apnsID: String? = nil, payload: ByteBuffer) {
        box = Box(Fields(shared: shared, deviceToken: deviceToken, apnsID: apnsID, payload: payload))
    }

    /// A name-based (version 5) UUID of a push and a device: the same pair always gives the
    /// same `apns-id`.
    public static func deterministicID(pushID: UUID, deviceID: Int64) -> String {
        String(unsafeUninitializedCapacity: DeterministicID.length) { text in
            DeterministicID(pushID: pushID, deviceID: deviceID).write(into: text)
            return DeterministicID.length
        }
    }

    /// ``deterministicID(pushID:deviceID:)`` as a header value, written straight into a request's
    /// header block (the sender writes one per notification, without a String in between).
    public struct DeterministicID: HTTP2HeaderValue, Sendable {
        /// A UUID's text: 8-4-4-4-12 hex digits.
        static let length = 36
        public var pushID: UUID
        public var deviceID: Int64

        public init(pushID: UUID, deviceID: Int64) {
            self.pushID = pushID
            self.deviceID = deviceID
        }

        public func append(to storage: inout [UInt8]) {
            Self.append(Self.length, to: &storage) { write(into: $0) }
        }

        /// Writes the 36 characters into `text`.
        func write(into text: UnsafeMutableBufferPointer<UInt8>) {
            // RFC 9562 §5.5: SHA-1 over a namespace and the name; the push id is the namespace.
            // The name's 24 bytes on the stack (this runs once per notification sent).
            var input = (pushID.uuid, deviceID.bigEndian)
            let digest = withUnsafeBytes(of: &input) { Insecure.SHA1.hash(data: $0) }
            var bytes = digest.withUnsafeBytes { digest in
                (digest.loadUnaligned(as: UInt64.self), digest.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            }
            // Formatted by hand (Foundation's uuidString goes through printf): 8-4-4-4-12, upper case.
            let digits: StaticString = "0123456789ABCDEF"
            withUnsafeMutableBytes(of: &bytes) { bytes in
                bytes[6] = (bytes[6] & 0x0F) | 0x50
                bytes[8] = (bytes[8] & 0x3F) | 0x80
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
            }
        }
    }

    /// Why this notification cannot be sent as it is, or nil. Checked before sending, so a
    /// mistake costs no round trip to Apple.
    public var problem: String? {
        if !APNsDeviceToken.isWellFormed(deviceToken) {
            return APNsDeviceToken.problem
        }
        return shared.problem(payload: payload)
    }

    /// Writes the request for this notification into `block` and returns its body (see
    /// ``APNsSharedFields/writeRequest(deviceToken:apnsID:authority:authorization:into:)``).
    func writeRequest(authority: String, authorization: String?, into block: inout HTTP2HeaderBlock) -> ByteBuffer {
        let fields = box.fields
        fields.shared.writeRequest(
            deviceToken: fields.deviceToken, apnsID: fields.apnsID, authority: authority,
            authorization: authorization, into: &block)
        return fields.payload
    }
}
