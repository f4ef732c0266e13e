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
}
