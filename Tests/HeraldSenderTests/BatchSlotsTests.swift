import Synchronization
import Testing

@testable import HeraldSender

@Suite("Batch slots: the bound on batches in flight and on batches at the gateways")
struct BatchSlotsTests {
    @Test("holding runs every body, never more at once than the slots")
    func holdingBoundsConcurrency() async {
        let slots = BatchSlots(count: 2)
        let running = Running()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<12 {
                group.addTask {
                    await SenderWorker.holding(slots) {
                        running.state.withLock {
                            $0.now += 1
                            $0.most = max($0.most, $0.now)
                        }
                        // Suspends, so that bodies not held back by the slots would overlap.
                        for _ in 0..<20 { await Task.yield() }
                        running.state.withLock {
                            $0.now -= 1
                            $0.finished += 1
                        }
                    }
                }
            }
        }
        let final = running.state.withLock { $0 }
        #expect(final.finished == 12 && final.now == 0)
        #expect(final.most <= 2)
        #expect((1...2).contains(slots.mostHeld))
    }

    @Test("a body waiting for a slot is counted on /metrics until it gets one")
    func waitingIsCounted() async {
        let slots = BatchSlots(count: 1)
        let metrics = SenderMetrics()
        let gate = Gate()
        async let first: Void = SenderWorker.holding(slots, counting: metrics) { await gate.wait() }
        // The first body holds the only slot once the gate has its waiter.
        for _ in 0..<100_000 where !gate.isWaiting { await Task.yield() }
        #expect(gate.isWaiting)
        async let second: Int = SenderWorker.holding(slots, counting: metrics) { 7 }
        // Yields until the second body is held back (a bounded number, so a gauge never raised fails).
        for _ in 0..<100_000 where metrics.batchesWaitingForGateways.load(ordering: .relaxed) == 0 {
            await Task.yield()
        }
        #expect(metrics.prometheusText().contains("herald_sender_batches_waiting_for_gateways 1\n"))
        gate.open()
        _ = await first
        #expect(await second == 7)
        #expect(metrics.batchesWaitingForGateways.load(ordering: .relaxed) == 0)
        #expect(metrics.prometheusText().contains("herald_sender_batches_waiting_for_gateways 0\n"))
    }

    @Test("holding without slots runs the body at once")
    func holdingWithoutSlots() async {
        #expect(await SenderWorker.holding(nil) { 42 } == 42)
    }

    /// A body that waits until the test opens it.
    final class Gate: Sendable {
        private let state = Mutex<(opened: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

        var isWaiting: Bool { state.withLock { $0.waiter != nil } }

        func wait() async {
            await withCheckedContinuation { continuation in
                let now = state.withLock { state -> Bool in
                    if state.opened { return true }
                    state.waiter = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        }

        func open() {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                state.opened = true
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }
    }

    /// The bodies running now, the most that ran at once, and those finished.
    final class Running: Sendable {
        let state = Mutex((now: 0, most: 0, finished: 0))
    }
}
