import HeraldTiming
import Testing

@Suite("Back-off (pure)")
struct BackoffTests {
    @Test("ceilings double from the initial wait up to the maximum")
    func ceilings() {
        let backoff = Backoff(initial: .milliseconds(100), maximum: .seconds(1))
        #expect(backoff.ceiling(afterFailures: 1) == .milliseconds(100))
        #expect(backoff.ceiling(afterFailures: 2) == .milliseconds(200))
        #expect(backoff.ceiling(afterFailures: 4) == .milliseconds(800))
        #expect(backoff.ceiling(afterFailures: 5) == .seconds(1))
        #expect(backoff.ceiling(afterFailures: 500) == .seconds(1), "no overflow after many failures")
    }

    @Test("equal jitter: each wait lies between half and all of its ceiling")
    func equalJitter() {
        let backoff = Backoff(initial: .milliseconds(100), maximum: .seconds(1))
        #expect(backoff.delay(afterFailures: 1, unit: 0) == .milliseconds(50))
        #expect(backoff.delay(afterFailures: 1, unit: 1) == .milliseconds(100))
        #expect(backoff.delay(afterFailures: 3, unit: 0.5) == .milliseconds(300))
        var delays = backoff.delays()
        for failures in 1...8 {
            let delay = delays.next()
            let ceiling = backoff.ceiling(afterFailures: failures)
            #expect(delay >= ceiling / 2 && delay <= ceiling)
        }
        #expect(delays.failures == 8)
        delays.reset()
        #expect(delays.next() <= .milliseconds(100), "a run starts over after a success")
    }

    @Test("durations in milliseconds for SQL and librdkafka")
    func milliseconds() {
        #expect(Duration.milliseconds(1500).wholeMilliseconds == 1500)
        #expect(Duration.microseconds(2500).wholeMilliseconds == 2)
        #expect(Duration.microseconds(2500).fractionalMilliseconds == 2.5)
    }
}
