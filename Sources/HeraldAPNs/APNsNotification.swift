import Crypto
import Foundation

/// One notification to one device, ready to send.
public struct APNsNotification: Sendable, Hashable {
    /// The device token in hex (any even length).
    public var deviceToken: String
    /// `apns-topic`: the bundle id with the push type's suffix (``APNsPushType/topic(forBundleID:)``).
    public var topic: String
    public var pushType: APNsPushType
    public var priority: APNsPriority
    /// `apns-expiration`: seconds since 1970 after which APNs stops trying; 0 means deliver
    /// once or never; nil leaves it to APNs (it stores and retries for a while).
    public var expiration: Int64?
    /// `apns-collapse-id` (at most 64 bytes): a later notification with the same id replaces
    /// this one on the device.
    public var collapseID: String?
    /// `apns-id`, a UUID; Herald sets a deterministic one (``deterministicID(pushID:deviceID:)``)
    /// so a notification sent twice is recognisably the same.
    public var apnsID: String?
    /// The encoded payload (``APNsPayload/validated(for:)``).
    public var payload: [UInt8]

    public init(deviceToken: String, topic: String, pushType: APNsPushType = .alert, priority: APNsPriority? = nil,
                expiration: Int64? = nil, collapseID: String? = nil, apnsID: String? = nil, payload: [UInt8]) {
        self.deviceToken = deviceToken
        self.topic = topic
        self.pushType = pushType
        self.priority = priority ?? pushType.defaultPriority
        self.expiration = expiration
        self.collapseID = collapseID
        self.apnsID = apnsID
        self.payload = payload
    }

    /// A name-based (version 5) UUID of a push and a device: the same pair always gives the
    /// same `apns-id`.
    public static func deterministicID(pushID: UUID, deviceID: Int64) -> String {
        // RFC 9562 §5.5: SHA-1 over a namespace and the name; the push id is the namespace.
        var input = withUnsafeBytes(of: pushID.uuid) { Array($0) }
        withUnsafeBytes(of: deviceID.bigEndian) { input.append(contentsOf: $0) }
        var bytes = Array(Insecure.SHA1.hash(data: input).prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x50
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        let uuid = bytes.withUnsafeBytes { $0.loadUnaligned(as: uuid_t.self) }
        return UUID(uuid: uuid).uuidString
    }

    /// Why this notification cannot be sent as it is, or nil. Checked before sending, so a
    /// mistake costs no round trip to Apple.
    public var problem: String? {
        if deviceToken.isEmpty || deviceToken.utf8.count % 2 != 0 || !deviceToken.utf8.allSatisfy(\.isHexDigit) {
            return "the device token must be hex of even length"
        }
        if payload.isEmpty { return "the payload is empty" }
        if payload.count > pushType.maximumPayloadBytes {
            return "the payload is \(payload.count) bytes; \(pushType.rawValue) notifications take at most \(pushType.maximumPayloadBytes)"
        }
        if !pushType.allowedPriorities.contains(priority) {
            return "\(pushType.rawValue) notifications take priority \(pushType.allowedPriorities.map(\.rawValue).sorted()), not \(priority.rawValue)"
        }
        if let collapseID, collapseID.utf8.count > 64 { return "the collapse id is over 64 bytes" }
        return nil
    }
}

extension UInt8 {
    fileprivate var isHexDigit: Bool {
        (self &- 48) < 10 || ((self | 0x20) &- 97) < 6
    }
}
