import NIOCore

/// What the gateway attaches to each push it writes to a connection: the device, and the promise
/// the delivery port's request waits on. The session hands the ticket back when the push is
/// acknowledged (the promise gets true: `delivered_online`) or must go through APNs instead
/// (false: no ack in time, the connection closed, a slow reader).
struct DeliveryTicket: Sendable {
    var deviceID: Int64
    var acknowledged: EventLoopPromise<Bool>
}
