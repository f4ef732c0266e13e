import HeraldHTTP2
import NIOCore

/// Notifications sent together through ``APNsClient/send(_:urgent:)``, read one at a time as
/// each request is written: a batch of a push's devices need not hold a notification value (a
/// box, a token String, an `apns-id` String) per device, only what differs between them.
///
/// An array of ``APNsNotification``s is one; the sender's job batches are another.
public protocol APNsNotificationBatch: Sendable {
    /// How many notifications there are, at indexes `0..<count`.
    var count: Int { get }

    /// Why the notification at `index` cannot be sent as it is, or nil (the rules of
    /// ``APNsNotification/problem``). Asked once per notification, before any is sent.
    func problem(at index: Int) -> String?

    /// Writes the request of the notification at `index` into `block` (through
    /// ``APNsSharedFields``, whose `writeRequest` is the one definition of an APNs request) and
    /// returns its body. Called on a connection's event loop, once per time it is sent.
    func writeRequest(at index: Int, authority: String, authorization: String?, into block: inout HTTP2HeaderBlock)
        -> ByteBuffer
}

extension Array: APNsNotificationBatch where Element == APNsNotification {
    public func problem(at index: Int) -> String? { self[index].problem }

    public func writeRequest(
        at index: Int, authority: String, authorization: String?, into block: inout HTTP2HeaderBlock
    ) -> ByteBuffer {
        self[index].writeRequest(authority: authority, authorization: authorization, into: &block)
    }
}
