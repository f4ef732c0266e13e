import Testing

@testable import HeraldCenter

@Suite("the outbox relay's wake-up: a notification ends its wait, none is lost, none counts twice")
struct OutboxWakeupTests {
    /// An interval that ends after many turns of the scheduler (not a clock): long enough for a
    /// signal given before or during the wait to win.
    static let manyTurns: @Sendable () async -> Void = { for _ in 0..<100_000 { await Task.yield() } }

    @Test("a signal given before the wait ends it at once")
    func signalBeforeWait() async {
        let wakeup = OutboxWakeup()
        wakeup.signal()
        #expect(await wakeup.wait(interval: Self.manyTurns) == .signalled)
    }

    @Test("a signal given during the wait ends it")
    func signalDuringWait() async {
        let wakeup = OutboxWakeup()
        async let ending = wakeup.wait(interval: Self.manyTurns)
        // Turns of the scheduler until the wait has begun (bounded: a wait that never begins fails).
        for _ in 0..<100_000 where !wakeup.isWaiting { await Task.yield() }
        #expect(wakeup.isWaiting)
        wakeup.signal()
        #expect(await ending == .signalled)
    }

    @Test("without a signal the interval ends the wait; a signal after it is kept for the next, and counts once")
    func intervalThenKeptSignal() async {
        let wakeup = OutboxWakeup()
        #expect(await wakeup.wait(interval: {}) == .interval)
        wakeup.signal()
        wakeup.signal()
        #expect(await wakeup.wait(interval: Self.manyTurns) == .signalled)
        #expect(await wakeup.wait(interval: {}) == .interval)
    }
}
