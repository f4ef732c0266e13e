import HeraldCore
import HeraldTiming
import Synchronization
import Testing

@Suite struct DeadlineTests {
    @Test func anAnswerInTimeIsReturned() async throws {
        let answer = try await withDeadline(.seconds(10)) { 42 }
        #expect(answer == 42)
    }

    @Test func theOperationsErrorIsThrown() async {
        struct Refused: Error {}
        await #expect(throws: Refused.self) {
            try await withDeadline(.seconds(10)) { () async throws -> Int in throw Refused() }
        }
    }

    /// The case the deadline exists for: an operation that neither answers nor reacts to
    /// cancellation (a pool waiting for a database that is gone). The caller goes on; the
    /// operation, released later, ends by itself.
    @Test func anOperationThatIgnoresCancellationDoesNotHoldTheCaller() async throws {
        let clock = ManualClock()
        let gate = Gate()
        let ended = Gate()
        let call = Task {
            try await withDeadline(.milliseconds(50), clock: clock) { () async -> Int in
                await gate.wait()
                ended.open()
                return 1
            }
        }
        await clock.waitForSleepers(1)
        clock.advance(by: .milliseconds(50))
        await #expect(throws: DeadlineExceeded.self) { try await call.value }
        #expect(!ended.isOpen, "the caller was answered while the operation still waited")
        gate.open()
        // The operation, released, ends by itself.
        await ended.wait()
    }

    @Test func theCallersCancellationEndsTheWait() async {
        let gate = Gate()
        defer { gate.open() }
        let waiting = Task {
            try await withDeadline(.seconds(600)) { () async -> Int in
                await gate.wait()
                return 1
            }
        }
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
    }
}

/// A wait that only `open()` ends — cancellation does not.
private final class Gate: Sendable {
    private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func wait() async {
        await withCheckedContinuation { continuation in
            let resumeNow = state.withLock { state -> Bool in
                if state.open { return true }
                state.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    var isOpen: Bool { state.withLock { $0.open } }

    func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}

/// A deadline on getting started only: an import waits for its connection a few seconds at most,
/// then runs as long as its upload.
@Suite struct StartDeadlineTests {
    @Test("started in time, the operation may run past the limit")
    func startedInTimeRunsOn() async throws {
        let clock = ManualClock()
        let gate = Gate()
        let call = Task {
            try await withStartDeadline(.milliseconds(50), clock: clock) { started in
                #expect(started())
                await gate.wait()
                return 7
            }
        }
        // The limit passes while the operation runs: its deadline fires, and is ignored.
        await clock.waitForSleepers(1)
        clock.advance(by: .seconds(1))
        await clock.waitForSleepers(0)
        gate.open()
        #expect(try await call.value == 7)
    }

    @Test("never started (a pool that neither answers nor reacts to cancellation): the caller goes on")
    func neverStartedThrows() async throws {
        let clock = ManualClock()
        let gate = Gate()
        // The gate opens only after the call returned: had it waited for the operation, it would
        // never return.
        let call = Task {
            try await withStartDeadline(.milliseconds(50), clock: clock) { _ in
                await gate.wait()
                return 1
            }
        }
        await clock.waitForSleepers(1)
        clock.advance(by: .milliseconds(50))
        await #expect(throws: DeadlineExceeded.self) { try await call.value }
        gate.open()
    }

    @Test func theOperationsErrorIsThrown() async {
        struct Refused: Error {}
        await #expect(throws: Refused.self) {
            try await withStartDeadline(.seconds(10)) { started -> Int in
                _ = started()
                throw Refused()
            }
        }
    }

    @Test("started after the deadline: started() says so, and the operation gives up what it got")
    func startedTooLate() async throws {
        let clock = ManualClock()
        let gate = Gate()
        let decided = Gate()
        let late = Mutex<Bool?>(nil)
        let call = Task {
            try await withStartDeadline(.milliseconds(50), clock: clock) { started -> Int in
                await gate.wait()
                late.withLock { $0 = started() }
                decided.open()
                return 1
            }
        }
        await clock.waitForSleepers(1)
        clock.advance(by: .milliseconds(50))
        await #expect(throws: DeadlineExceeded.self) { try await call.value }
        gate.open()
        await decided.wait()
        #expect(late.withLock { $0 } == false)
    }

    @Test("the caller cancelled after the start waits for the operation, which sees the cancellation")
    func cancelledAfterTheStartWaits() async throws {
        let clock = ManualClock()
        let began = Gate()
        let sawCancellation = Gate()
        let release = Gate()
        let ended = Mutex(false)
        let running = Task {
            try await withStartDeadline(.seconds(10), clock: clock) { started -> Int in
                _ = started()
                began.open()
                do {
                    // Only cancellation ends this sleep: the test never advances the clock so far.
                    try await clock.sleep(for: .seconds(3600))
                } catch {
                    sawCancellation.open()
                    // Held until the test lets go: a caller answered at the cancellation would
                    // be answered now, before `ended`.
                    await release.wait()
                    ended.withLock { $0 = true }
                    throw error
                }
                return 1
            }
        }
        await began.wait()
        running.cancel()
        await sawCancellation.wait()
        release.open()
        await #expect(throws: CancellationError.self) { try await running.value }
        #expect(ended.withLock { $0 }, "the caller was answered only once the operation had ended")
    }
}
