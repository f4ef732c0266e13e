import NIOCore

/// What the gateway attaches to each push it writes to a connection: the device, and the share of
/// the delivery request it belongs to. The session hands the ticket back when the push is
/// acknowledged (true: `delivered_online`) or must go through APNs instead (false: no ack in
/// time, the connection closed, a slow reader); each ticket is answered exactly once.
struct DeliveryTicket: Sendable {
    var deviceID: Int64
    var batch: DeliveryBatch

    func answer(_ reached: Bool) { batch.answer(deviceID, reached: reached) }
}

/// One event loop's share of a delivery request: counts its pushes' (and revokes') answers and,
/// once every one is in, fulfils one promise with the devices reached — one counter for the
/// loop's share instead of a promise and a future per push.
///
/// Confined to its event loop, where every connection it writes to answers (checked in debug
/// builds); `Sendable` only to travel inside a ticket.
final class DeliveryBatch: @unchecked Sendable {
    private let done: EventLoopPromise<[Int64]>
    private var remaining: Int
    private var reached: [Int64] = []

    /// A share of `count` answers; `done` gets the devices reached once the last is in.
    init(count: Int, done: EventLoopPromise<[Int64]>) {
        precondition(count > 0, "a share holds at least one delivery")
        self.done = done
        remaining = count
        reached.reserveCapacity(count)
    }

    func answer(_ deviceID: Int64, reached: Bool) {
        done.futureResult.eventLoop.assertInEventLoop()
        precondition(remaining > 0, "a delivery is answered once")
        if reached { self.reached.append(deviceID) }
        remaining -= 1
        if remaining == 0 { done.succeed(self.reached) }
    }
}
