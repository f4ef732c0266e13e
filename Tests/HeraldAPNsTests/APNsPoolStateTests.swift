import Synchronization
import Testing

@testable import HeraldAPNs

/// The pool's bookkeeping without connections: who waits, and who leaves the line.
@Suite struct APNsPoolStateTests {
    @Test(
        "a stopped send's waiter leaves the line: it is never called, and an urgent one no longer holds the others back"
    )
    func withdrawnWaiters() {
        var state = APNsPoolState(connections: 1, maxInFlight: 10)
        let called = Mutex(0)
        let urgent = state.wait({ _ in called.withLock { $0 += 1 } }, urgent: true)
        let plain = state.wait({ _ in called.withLock { $0 += 1 } }, urgent: false)
        #expect(state.urgentWaiters.count == 1 && state.waiters.count == 1)
        let first = state.cancelWait(urgent)
        #expect(first.withdrawn && first.woken.isEmpty, "no connection: nobody can lease yet")
        #expect(state.urgentWaiters.isEmpty && state.waiters.count == 1)
        #expect(!state.cancelWait(urgent).withdrawn, "withdrawn once")
        #expect(state.cancelWait(plain).withdrawn)
        #expect(state.failWaiters().isEmpty, "nobody left to tell")
        #expect(called.withLock { $0 } == 0)
    }

    @Test(
        "a waiter that is not urgent is woken on a connection once a refill group is free there, or all it wants, or a 128th of what the connection carries, or at once while too few are in flight to free a group"
    )
    func refillGroups() {
        #expect(APNsPoolState.refillGroup(maxInFlight: 2000) == 7)
        #expect(APNsPoolState.refillGroup(maxInFlight: 25) == 1)
        #expect(APNsPoolState(connections: 2, maxInFlight: 6400).refillGroup == 25)
        /// The connection woken for `wanted` streams with these connections' (room, limit).
        func woken(_ connections: [(room: Int, limit: Int)], inFlight: Int, wanted: Int = 500) -> Int? {
            APNsPoolState.connectionToWake(
                count: connections.count, room: { connections[$0].room }, limit: { connections[$0].limit },
                inFlight: inFlight, maxInFlight: 2000, wanted: wanted, refillGroup: 7)
        }
        #expect(woken([(0, 1000), (0, 1000)], inFlight: 2000) == nil, "nothing to give")
        #expect(woken([(1, 1000), (0, 1000)], inFlight: 1999) == nil, "one answer freed one stream")
        #expect(woken([(6, 1000), (6, 1000)], inFlight: 1988) == nil, "a group is counted per connection")
        #expect(woken([(6, 1000), (7, 1000)], inFlight: 1987) == 1, "a whole group on the second")
        #expect(woken([(9, 1000), (7, 1000)], inFlight: 1984) == 0, "the most room wins")
        #expect(woken([(3, 1000), (0, 1000)], inFlight: 1997, wanted: 3) == 0, "all it wants")
        #expect(woken([(1, 1000), (0, 1000)], inFlight: 1999, wanted: 1) == 0, "a single notification's send")
        #expect(
            woken([(1, 1), (0, 1000)], inFlight: 1000) == 0,
            "a reopened connection's one stream before it authenticated, beside a full one")
        #expect(woken([(1, 4), (1, 4), (0, 4)], inFlight: 10) == 0, "a server allowing four streams a connection")
        #expect(woken([(4, 1000), (0, 1000)], inFlight: 6) == 0, "fewer than a group in flight: none may come back")
        #expect(woken([(4, 1000), (0, 1000)], inFlight: 7) == nil)
        #expect(woken([(50, 1000), (0, 1000)], inFlight: 1993) == 0)
        #expect(woken([(50, 1000), (0, 1000)], inFlight: 1995) == nil, "the in-flight bound leaves fewer than a group")
    }

    @Test("a waiter says how many streams it could use, at least one")
    func wantedStreams() {
        var state = APNsPoolState(connections: 1, maxInFlight: 10)
        state.wait({ _ in }, wanted: 40, urgent: false)
        state.wait({ _ in }, wanted: 0, urgent: true)
        state.wait({ _ in }, urgent: false)
        #expect(state.waiters.map(\.wanted) == [40, 1])
        #expect(state.urgentWaiters.map(\.wanted) == [1])
        #expect(state.connectionToWake(wanted: 40) == nil, "no connection yet")
    }
}
