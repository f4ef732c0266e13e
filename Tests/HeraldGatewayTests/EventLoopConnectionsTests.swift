import HeraldGatewayProtocol
import NIOCore
import NIOEmbedded
import Testing

@testable import HeraldGateway

/// Each event loop's sweep visits a connection only when its deadline falls due: its buckets by
/// tick, without sockets or a running loop.
@Suite("gateway sweep: connections visited at their deadlines")
struct EventLoopConnectionsTests {
    /// A connection that records the sweep's visits and names the deadline it is given next.
    final class Visited: SweptConnection {
        let loop: EventLoopConnections
        let channel = EmbeddedChannel()
        var visits: [UInt64] = []
        /// What the connection names at each visit (nil: nothing due any more).
        var next: [UInt64] = []

        init(_ loop: EventLoopConnections, due: UInt64?) {
            self.loop = loop
            loop.track(self, of: channel, due: due)
        }

        func tick(now: UInt64) {
            visits.append(now)
            if !next.isEmpty { loop.schedule(channel, due: next.removeFirst()) }
        }

        func goaway(_ frame: GatewayFrame) {}
    }

    static func loop() -> EventLoopConnections {
        EventLoopConnections(eventLoop: EmbeddedEventLoop(), maximumHandshakes: 8, tick: .milliseconds(250), now: 0)
    }

    /// Runs the sweep every 250 ms from `from` through `through`.
    static func sweep(_ loop: EventLoopConnections, from: UInt64 = 250, through: UInt64) {
        for now in stride(from: from, through: through, by: 250) { loop.tick(now: now) }
    }

    @Test("a connection is visited at the first tick at or after its deadline, and not before")
    func visitedWhenDue() {
        let loop = Self.loop()
        let onTick = Visited(loop, due: 1_000)
        let between = Visited(loop, due: 1_001)
        Self.sweep(loop, through: 750)
        #expect(onTick.visits.isEmpty && between.visits.isEmpty)
        Self.sweep(loop, from: 1_000, through: 2_000)
        #expect(onTick.visits == [1_000])
        #expect(between.visits == [1_250])
    }

    @Test("a later deadline does not move a visit; an earlier one does, and the old bucket skips it")
    func moves() {
        let loop = Self.loop()
        let later = Visited(loop, due: 1_000)
        loop.schedule(later.channel, due: 60_000)  // a frame was heard: the idle timeout moved on
        later.next = [60_000]
        let earlier = Visited(loop, due: 60_000)
        loop.schedule(earlier.channel, due: 2_000)  // a push: its ack deadline
        Self.sweep(loop, through: 70_000)
        #expect(later.visits == [1_000, 60_000])
        #expect(earlier.visits == [2_000])
    }

    @Test("a deadline already passed is visited at the next tick; a connection that left is not visited")
    func passedAndForgotten() {
        let loop = Self.loop()
        Self.sweep(loop, through: 5_000)
        let late = Visited(loop, due: 100)
        let gone = Visited(loop, due: 5_250)
        loop.forget(gone.channel)
        Self.sweep(loop, from: 5_250, through: 6_000)
        #expect(late.visits == [5_250])
        #expect(gone.visits.isEmpty)
    }

    @Test("a sweep that runs late visits every bucket it missed, once")
    func lateSweep() {
        let loop = Self.loop()
        let first = Visited(loop, due: 500)
        let second = Visited(loop, due: 1_500)
        second.next = [1_600]
        loop.tick(now: 2_000)
        #expect(first.visits == [2_000])
        #expect(second.visits == [2_000, 2_000])
        loop.tick(now: 3_000)
        #expect(second.visits == [2_000, 2_000])
    }

    @Test("idle connections cost a visit per deadline, not one per tick")
    func idleConnections() {
        let loop = Self.loop()
        // 1,000 connections whose idle timeout (150 s) is pushed on by a heartbeat each minute:
        // each is visited at its first deadline, finds the later one, and is visited there.
        let connections = (0..<1_000).map { index in
            let connection = Visited(loop, due: 150_000 + UInt64(index))
            connection.next = [210_000 + UInt64(index)]
            return connection
        }
        Self.sweep(loop, through: 300_000)  // 1,200 ticks
        #expect(connections.allSatisfy { $0.visits.count == 2 })
    }
}
