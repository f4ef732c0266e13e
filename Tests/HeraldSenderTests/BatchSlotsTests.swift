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

    @Test("holding without slots runs the body at once")
    func holdingWithoutSlots() async {
        #expect(await SenderWorker.holding(nil) { 42 } == 42)
    }

    /// The bodies running now, the most that ran at once, and those finished.
    final class Running: Sendable {
        let state = Mutex((now: 0, most: 0, finished: 0))
    }
}
