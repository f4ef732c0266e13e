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
        "a waiter that is not urgent is woken once a refill group is free for it, or all it wants, or at once while too few are in flight to free a group"
    )
    func refillGroups() {
        #expect(APNsPoolState.refillGroup(maxInFlight: 2000) == 7)
        #expect(APNsPoolState.refillGroup(maxInFlight: 25) == 1)
        #expect(APNsPoolState(connections: 2, maxInFlight: 6400).refillGroup == 25)
        func wakes(free: Int, inFlight: Int, wanted: Int) -> Bool {
            APNsPoolState.wakes(free: free, inFlight: inFlight, wanted: wanted, refillGroup: 31)
        }
        #expect(!wakes(free: 0, inFlight: 0, wanted: 500), "nothing to give")
        #expect(!wakes(free: 1, inFlight: 1999, wanted: 500), "one answer freed one stream")
        #expect(!wakes(free: 30, inFlight: 1970, wanted: 500))
        #expect(wakes(free: 31, inFlight: 1969, wanted: 500), "a whole group")
        #expect(wakes(free: 3, inFlight: 1997, wanted: 3), "all it wants")
        #expect(wakes(free: 1, inFlight: 1999, wanted: 1), "a single notification's send")
        #expect(wakes(free: 4, inFlight: 30, wanted: 500), "fewer than a group in flight: none may come back")
        #expect(!wakes(free: 4, inFlight: 31, wanted: 500))
    }

    @Test("a waiter says how many streams it could use, at least one")
    func wantedStreams() {
        var state = APNsPoolState(connections: 1, maxInFlight: 10)
        state.wait({ _ in }, wanted: 40, urgent: false)
        state.wait({ _ in }, wanted: 0, urgent: true)
        state.wait({ _ in }, urgent: false)
        #expect(state.waiters.map(\.wanted) == [40, 1])
        #expect(state.urgentWaiters.map(\.wanted) == [1])
        #expect(state.free == 0, "no connection yet")
    }
}
