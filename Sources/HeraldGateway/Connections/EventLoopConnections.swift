import HeraldGatewayProtocol
import NIOCore

/// What an event loop's sweep drives: a connection's timeouts, and the drain's goaway.
protocol SweptConnection: AnyObject {
    /// Something of this connection fell due (milliseconds of the monotonic clock): it acts on
    /// what is due and names its next deadline again (``EventLoopConnections/schedule(_:due:)``).
    func tick(now: UInt64)
    /// The gateway is draining: tell the client, then leave.
    func goaway(_ frame: GatewayFrame)
}

/// One event loop's connections, each visited by the loop's sweep only when one of its deadlines
/// falls due, and its count of TLS handshakes in progress.
///
/// No timer per connection (`../shared/GATEWAY.md`: 100,000 timers are 100,000 heap entries
/// re-armed on every frame), and no visit of every connection on every tick either: each
/// connection names its earliest deadline (hello, idle, a push's ack, …) and waits in the bucket of
/// the tick that passes it. A deadline that moves later (a frame heard, a push acknowledged) costs
/// nothing: the connection is visited at the old one, finds nothing due and names the new one. So
/// an idle connection that sends its heartbeats is visited about once per idle timeout, and a
/// push costs one visit at its ack deadline — where a sweep of every connection made 100,000
/// idle connections 400,000 visits a second at the default tick.
///
/// Confined to its event loop: every method runs there (checked in debug builds), so nothing here
/// takes a lock; it is `Sendable` only so that the server can hold one per loop.
final class EventLoopConnections: @unchecked Sendable {
    let eventLoop: EventLoop
    private struct Tracked {
        var channel: Channel
        var connection: SweptConnection
        /// The tick whose bucket holds this connection, if any.
        var bucket: UInt64? = nil
    }
    private var connections: [ObjectIdentifier: Tracked] = [:]
    /// Connections by the tick that visits them (a tick's number is its time ÷ the tick); an
    /// entry whose connection left or moved to an earlier bucket is skipped.
    private var buckets: [UInt64: [ObjectIdentifier]] = [:]
    /// Every bucket up to this one is swept.
    private var swept: UInt64
    private let tickMilliseconds: UInt64
    private var handshakes = 0
    private let maximumHandshakes: Int

    /// - Parameter tick: how often the loop's sweep runs (`gateway.tickMs`): the resolution of
    ///   every deadline.
    init(eventLoop: EventLoop, maximumHandshakes: Int, tick: Duration, now: UInt64 = EventLoopConnections.now()) {
        self.eventLoop = eventLoop
        self.maximumHandshakes = maximumHandshakes
        tickMilliseconds = UInt64(max(1, tick.wholeMilliseconds))
        swept = now / tickMilliseconds
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
    /// the connection that replaces it, which keeps the sniffer's bucket), visiting it at `due`.
    func track(_ connection: SweptConnection, of channel: Channel, due: UInt64?) {
        eventLoop.assertInEventLoop()
        connections[ObjectIdentifier(channel), default: Tracked(channel: channel, connection: connection)]
            .connection = connection
        schedule(channel, due: due)
    }

    /// Visits `channel`'s connection at the first tick at or after `due` — unless it is to be
    /// visited earlier already (it then names its deadline again at that visit). A deadline
    /// passed already is visited at the next tick; nil changes nothing.
    func schedule(_ channel: Channel, due: UInt64?) {
        eventLoop.assertInEventLoop()
        let id = ObjectIdentifier(channel)
        guard let due, let tracked = connections[id] else { return }
        let wanted = max((due + tickMilliseconds - 1) / tickMilliseconds, swept + 1)
        if let bucket = tracked.bucket, bucket <= wanted { return }
        connections[id]!.bucket = wanted
        buckets[wanted, default: []].append(id)
    }

    func forget(_ channel: Channel) {
        eventLoop.assertInEventLoop()
        connections[ObjectIdentifier(channel)] = nil
    }

    /// The sweep: visits the connections of every bucket whose tick has come.
    func tick(now: UInt64) {
        eventLoop.assertInEventLoop()
        let through = now / tickMilliseconds
        while swept < through {
            swept += 1
            guard let due = buckets.removeValue(forKey: swept) else { continue }
            for id in due {
                // Left, or moved to an earlier bucket and visited there.
                guard let tracked = connections[id], tracked.bucket == swept else { continue }
                connections[id]!.bucket = nil
                tracked.connection.tick(now: now)
            }
        }
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
