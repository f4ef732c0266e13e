import HeraldGatewayProtocol
import NIOCore

/// What an event loop's sweep drives: a connection's timeouts, and the drain's goaway.
protocol SweptConnection: AnyObject {
    /// The coarse clock ticked (milliseconds of the monotonic clock).
    func tick(now: UInt64)
    /// The gateway is draining: tell the client, then leave.
    func goaway(_ frame: GatewayFrame)
}

/// One event loop's connections, swept on one repeated task per loop rather than a timer per
/// connection (`../shared/GATEWAY.md`: 100,000 timers are 100,000 heap entries re-armed on every
/// frame), and its count of TLS handshakes in progress.
///
/// Confined to its event loop: every method runs there (checked in debug builds), so nothing here
/// takes a lock; it is `Sendable` only so that the server can hold one per loop.
final class EventLoopConnections: @unchecked Sendable {
    let eventLoop: EventLoop
    private var connections: [ObjectIdentifier: (channel: Channel, connection: SweptConnection)] = [:]
    private var handshakes = 0
    private let maximumHandshakes: Int

    init(eventLoop: EventLoop, maximumHandshakes: Int) {
        self.eventLoop = eventLoop
        self.maximumHandshakes = maximumHandshakes
    }

    /// Connections on this loop (sniffing, upgrading or speaking frames).
    var count: Int {
        eventLoop.assertInEventLoop()
        return connections.count
    }

    /// Takes a place among the handshakes in progress, or refuses when they are all taken.
    func startHandshake() -> Bool {
        eventLoop.assertInEventLoop()
        guard handshakes < maximumHandshakes else { return false }
        handshakes += 1
        return true
    }

    func handshakeFinished() {
        eventLoop.assertInEventLoop()
        handshakes -= 1
    }

    /// Sweeps `connection` as the connection of `channel` from now on (the sniffer first, then
    /// the connection that replaces it).
    func track(_ connection: SweptConnection, of channel: Channel) {
        eventLoop.assertInEventLoop()
        connections[ObjectIdentifier(channel)] = (channel, connection)
    }

    func forget(_ channel: Channel) {
        eventLoop.assertInEventLoop()
        connections[ObjectIdentifier(channel)] = nil
    }

    func tick(now: UInt64) {
        eventLoop.assertInEventLoop()
        // A tick may close connections, and a close forgets them: sweep a copy.
        for entry in Array(connections.values) { entry.connection.tick(now: now) }
    }

    func goaway(_ frame: GatewayFrame) {
        eventLoop.assertInEventLoop()
        for entry in Array(connections.values) { entry.connection.goaway(frame) }
    }

    /// Closes every connection left (the end of a drain).
    func closeAll() {
        eventLoop.assertInEventLoop()
        for entry in Array(connections.values) { entry.channel.close(promise: nil) }
    }

    /// The monotonic clock the sweep and the sessions read, in milliseconds.
    static func now() -> UInt64 { NIODeadline.now().uptimeNanoseconds / 1_000_000 }
}
