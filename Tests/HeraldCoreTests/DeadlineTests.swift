import HeraldCore
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
        let gate = Gate()
        let ended = Atomic<Bool>(false)
        await #expect(throws: DeadlineExceeded.self) {
            try await withDeadline(.milliseconds(50)) { () async -> Int in
                await gate.wait()
                ended.store(true, ordering: .relaxed)
                return 1
            }
        }
        let endedAtDeadline = ended.load(ordering: .relaxed)
        #expect(!endedAtDeadline)
        gate.open()
        for _ in 0..<200 where !ended.load(ordering: .relaxed) { try await Task.sleep(for: .milliseconds(10)) }
        let endedAfterRelease = ended.load(ordering: .relaxed)
        #expect(endedAfterRelease)
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
        let answer = try await withStartDeadline(.milliseconds(50)) { started in
            #expect(started())
            try await Task.sleep(for: .milliseconds(300))
            return 7
        }
        #expect(answer == 7)
    }

    @Test("never started (a pool that neither answers nor reacts to cancellation): the caller goes on")
    func neverStartedThrows() async throws {
        let gate = Gate()
        // The gate opens only after the call returned: had it waited for the operation, it would
        // never return.
        await #expect(throws: DeadlineExceeded.self) {
            try await withStartDeadline(.milliseconds(50)) { _ in
                await gate.wait()
                return 1
            }
        }
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
        let gate = Gate()
        let late = Mutex<Bool?>(nil)
        await #expect(throws: DeadlineExceeded.self) {
            try await withStartDeadline(.milliseconds(50)) { started -> Int in
                await gate.wait()
                late.withLock { $0 = started() }
                return 1
            }
        }
        gate.open()
        for _ in 0..<500 where late.withLock({ $0 }) == nil { try await Task.sleep(for: .milliseconds(10)) }
        #expect(late.withLock { $0 } == false)
    }

    @Test("the caller cancelled after the start waits for the operation, which sees the cancellation")
    func cancelledAfterTheStartWaits() async throws {
        let ended = Mutex(false)
        let began = Mutex(false)
        let running = Task {
            try await withStartDeadline(.seconds(10)) { started -> Int in
                _ = started()
                began.withLock { $0 = true }
                do {
                    try await Task.sleep(for: .seconds(60))
                } catch {
                    try? await Task.sleep(for: .milliseconds(100))
                    ended.withLock { $0 = true }
                    throw error
                }
                return 1
            }
        }
        for _ in 0..<500 where !began.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(10)) }
        running.cancel()
        await #expect(throws: CancellationError.self) { try await running.value }
        #expect(ended.withLock { $0 }, "the caller was answered only once the operation had ended")
    }
}
