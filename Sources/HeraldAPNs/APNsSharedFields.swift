import HeraldAPNsVocabulary
import HeraldHTTP2
import NIOCore

/// What the notifications of one push share: every request field but the device token and the
/// `apns-id`. A batch of a million devices holds these once, and each request is written from
/// them and the two fields of its own (``writeRequest(deviceToken:apnsID:authority:authorization:into:)``,
/// the one definition of what an APNs request carries).
public struct APNsSharedFields: Sendable, Hashable {
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

    /// - Parameter priority: nil takes the push type's default (``APNsPushType/defaultPriority``).
    public init(
        topic: String, pushType: APNsPushType = .alert, priority: APNsPriority? = nil, expiration: Int64? = nil,
        collapseID: String? = nil
    ) {
        self.topic = topic
        self.pushType = pushType
        self.priority = priority ?? pushType.defaultPriority
        self.expiration = expiration
        self.collapseID = collapseID
    }

    /// Why a notification with these fields and `payload` cannot be sent, or nil: checked before
    /// sending, so a mistake costs no round trip to Apple. (The device token is checked by
    /// whoever holds it: see ``APNsNotification/problem``.)
    public func problem(payload: ByteBuffer) -> String? {
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

    /// Writes the header block of one notification's request into `block`.
    ///
    /// - Parameters:
    ///   - deviceToken: the token in hex, written after `/3/device/` in `:path`.
    ///   - apnsID: the notification's `apns-id`, or nil to let APNs make one.
    ///   - authority: `:authority`.
    ///   - authorization: `bearer <provider token>`, or nil with a certificate credential.
    func writeRequest(
        deviceToken: String, apnsID: String?, authority: String, authorization: String?,
        into block: inout HTTP2HeaderBlock
    ) {
        Self.writeRequest(
            deviceToken: deviceToken, apnsID: apnsID, authority: authority, authorization: authorization,
            into: &block, sharedFields: { write(into: &$0) })
    }

    /// The same, with the shared fields from ``encoded``: for a batch that sends many
    /// notifications with the same fields, which copies them per request as bytes, and writes
    /// each device's token hex and deterministic `apns-id` straight into the block. (Concrete
    /// types, not generic ones: a generic called from another module is not specialized there,
    /// and looked its types up at run time for every request.)
    public static func writeRequest(
        deviceToken: Hexadecimal.Digits, apnsID: APNsNotification.DeterministicID, authority: String,
        authorization: String?, encodedFields: HTTP2HeaderBlock, into block: inout HTTP2HeaderBlock
    ) {
        writeRequest(
            deviceToken: deviceToken, apnsID: apnsID, authority: authority, authorization: authorization,
            into: &block, sharedFields: { $0.add(contentsOf: encodedFields) })
    }

    /// These fields as the part of a request's header block they fill, written once (see
    /// ``writeRequest(deviceToken:apnsID:authority:authorization:encodedFields:into:)``).
    public var encoded: HTTP2HeaderBlock {
        var block = HTTP2HeaderBlock()
        write(into: &block)
        return block
    }

    /// The one definition of what an APNs request carries, and in which order.
    private static func writeRequest(
        deviceToken: some HTTP2HeaderValue, apnsID: (some HTTP2HeaderValue)?, authority: String,
        authorization: String?, into block: inout HTTP2HeaderBlock, sharedFields: (inout HTTP2HeaderBlock) -> Void
    ) {
        // Never indexed, as Apple asks of `:path`, `authorization` and `apns-id`: each either
        // differs on every request or is a secret, and indexing them would only push the shared
        // fields out of APNs' small HPACK table.
        block.addRequestPseudoHeaders(
            method: "POST", scheme: "https", authority: authority, pathPrefix: "/3/device/", path: deviceToken,
            pathNeverIndexed: true)
        if let authorization { block.add("authorization", authorization, neverIndexed: true) }
        sharedFields(&block)
        if let apnsID { block.add("apns-id", "", apnsID, neverIndexed: true) }
    }

    /// Writes the fields themselves (indexed: the same on every request of a push).
    private func write(into block: inout HTTP2HeaderBlock) {
        block.add("apns-topic", topic)
        block.add("apns-push-type", pushType.rawValue)
        block.add("apns-priority", String(priority.rawValue))
        if let expiration { block.add("apns-expiration", String(expiration)) }
        if let collapseID { block.add("apns-collapse-id", collapseID) }
    }
}
