import HeraldGatewayProtocol
import Logging
import NIOCore
import Synchronization

/// Where a connection arrived from, and when.
struct Arrival: Sendable {
    /// Milliseconds of the monotonic clock at accept: the hello's deadline counts from here.
    var accepted: UInt64
    /// The peer's address (the per-source limits' key).
    var source: String
    /// Set when the source opened connections faster than allowed: the connection is told
    /// `too_many_connections` with this wait (milliseconds) as soon as it can read a frame.
    var refusedForRate: UInt32?
}

/// What every connection of one gateway shares: the rules, the authenticator, the directory of
/// devices, the counters, and each event loop's sweep.
final class ConnectionEnvironment: Sendable {
    let rules: GatewaySession<DeliveryTicket>.Rules
    let authenticator: any HelloAuthenticating
    let directory: DeviceDirectory
    let metrics: GatewayMetrics
    /// Each event loop's connections, by the loop's identity.
    let loops: [ObjectIdentifier: EventLoopConnections]
    /// Names this gateway in connection ids (`Welcome.connection_id`: `<name>-<number>`).
    let name: String
    let logger: Logger
    private let connectionNumbers = Atomic<UInt64>(0)

    init(
        rules: GatewaySession<DeliveryTicket>.Rules, authenticator: any HelloAuthenticating, metrics: GatewayMetrics,
        loops: [EventLoopConnections], name: String, logger: Logger
    ) {
        self.rules = rules
        self.authenticator = authenticator
        self.directory = DeviceDirectory()
        self.metrics = metrics
        self.loops = Dictionary(uniqueKeysWithValues: loops.map { (ObjectIdentifier($0.eventLoop), $0) })
        self.name = name
        self.logger = logger
    }

    /// The sweep of `channel`'s event loop.
    func loop(of channel: Channel) -> EventLoopConnections {
        loops[ObjectIdentifier(channel.eventLoop)]!
    }

    /// Writes each delivery's push (or a recall's revoke) to its device's live connection here;
    /// the future holds the devices that acknowledged their push in time (within the ack timeout
    /// and one sweep), or whose revoke was written. A device not connected here is not reached, at once.
    func deliver(_ deliveries: [GatewayDelivery], on eventLoop: EventLoop) -> EventLoopFuture<[Int64]> {
        // One hop to each event loop for all of its connections' deliveries, and one flush per
        // connection after them (not a task and a flush per push).
        var byLoop: [ObjectIdentifier: (loop: EventLoop, items: [(DeviceDirectory.Entry, GatewayDelivery)])] = [:]
        for delivery in deliveries {
            guard let entry = directory.entry(delivery.deviceID) else { continue }
            let loop = entry.connection.eventLoop
            byLoop[ObjectIdentifier(loop), default: (loop, [])].items.append((entry, delivery))
        }
        var waits: [EventLoopFuture<[Int64]>] = []
        for (loop, items) in byLoop.values {
            waits.append(
                loop.flatSubmit {
                    let done = loop.makePromise(of: [Int64].self)
                    let batch = DeliveryBatch(count: items.count, done: done)
                    var touched: [GatewayConnectionHandler] = []
                    for (entry, delivery) in items {
                        let connection = entry.connection.value
                        let ticket = DeliveryTicket(deviceID: delivery.deviceID, batch: batch)
                        if delivery.hasRevoke {
                            connection.revoke(delivery.revoke, ticket: ticket)
                        } else if connection.deliver(delivery.push, ticket: ticket, flush: false) {
                            touched.append(connection)
                        }
                    }
                    for connection in touched { connection.flush() }
                    return done.futureResult
                })
        }
        return EventLoopFuture.whenAllSucceed(waits, on: eventLoop).map { $0.flatMap { $0 } }
    }

    /// The connection for a channel whose transport is set up.
    func makeConnection(channel: Channel, arrival: Arrival) -> GatewayConnectionHandler {
        GatewayConnectionHandler(
            environment: self, arrival: arrival,
            number: connectionNumbers.add(1, ordering: .relaxed).newValue)
    }
}
