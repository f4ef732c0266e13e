import Synchronization

/// An operation did not finish within its deadline.
public struct DeadlineExceeded: Error, CustomStringConvertible, Sendable {
    /// The time the operation was given.
    public let limit: Duration

    public var description: String { "no answer within \(limit)" }
}

/// Runs `operation` and returns its result, or throws ``DeadlineExceeded`` once `limit` has
/// passed without one — even when the operation does not react to cancellation.
///
/// For calls into clients that could wait without end (a connection pool waiting for a
/// database that may never answer): the caller goes on and decides what to do. On the deadline
/// the operation's task is cancelled and left to end by itself; its result is dropped. Give it
/// only operations whose late completion is harmless (a repeated read, an idempotent write).
///
/// - Parameter clock: what the deadline is measured on (tests give one they advance).
/// - Throws: what `operation` throws, ``DeadlineExceeded``, or `CancellationError` when the
///   calling task is cancelled first.
public func withDeadline<Result: Sendable, DeadlineClock: Clock<Duration>>(
    _ limit: Duration, clock: DeadlineClock = ContinuousClock(),
    _ operation: @escaping @Sendable () async throws -> Result
) async throws -> Result {
    try await race(limit, clock: clock, whenStarted: .keepsTheDeadline) { _ in try await operation() }
}

/// Runs `operation`, which must call the `started` it is given within `limit` (it got what it
/// waited for: a connection from a pool); from then on it may run as long as it needs, and the
/// caller waits for it. When `started` was not called in time, the caller goes on at once with
/// ``DeadlineExceeded`` and the operation is cancelled and left to end by itself, as with
/// ``withDeadline(_:_:)`` — a pool need not react to cancellation for the caller to be free.
///
/// `started` returns whether the operation may go on: false when the deadline came first (the
/// caller has already been answered), and then the operation must give up what it got and stop.
/// Cancelling the caller after the start cancels the operation and waits for it to end.
///
/// For work that waits for a resource and is then bounded otherwise: a device import waits for
/// its connection a few seconds at most, then runs as long as its upload, which is paced.
///
/// - Parameter clock: what the deadline is measured on (tests give one they advance).
/// - Throws: what `operation` throws, ``DeadlineExceeded``, or `CancellationError` when the
///   calling task is cancelled before the start.
public func withStartDeadline<Result: Sendable, DeadlineClock: Clock<Duration>>(
    _ limit: Duration, clock: DeadlineClock = ContinuousClock(),
    _ operation: @escaping @Sendable (_ started: @escaping @Sendable () -> Bool) async throws -> Result
) async throws -> Result {
    try await race(limit, clock: clock, whenStarted: .liftsTheDeadline, operation)
}

private enum DeadlineKind {
    case keepsTheDeadline, liftsTheDeadline
}

private func race<Result: Sendable, DeadlineClock: Clock<Duration>>(
    _ limit: Duration, clock: DeadlineClock, whenStarted kind: DeadlineKind,
    _ operation: @escaping @Sendable (_ started: @escaping @Sendable () -> Bool) async throws -> Result
) async throws -> Result {
    let race = DeadlineRace<Result>(liftedByStart: kind == .liftsTheDeadline)
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
            race.start(continuation)
            let work = Task {
                do {
                    race.finish(.success(try await operation { race.markStarted() }))
                } catch {
                    race.finish(.failure(error))
                }
            }
            let timer = Task {
                try? await clock.sleep(for: limit)
                race.expire(DeadlineExceeded(limit: limit))
            }
            race.hold(work: work, timer: timer)
        }
    } onCancel: {
        race.cancelledByCaller()
    }
}

/// The first of an operation's result, its deadline and the caller's cancellation resumes the
/// caller; whatever comes later is dropped, and both tasks are cancelled. With a deadline lifted
/// by the start (``withStartDeadline(_:_:)``), once the operation has started only its own end
/// resumes the caller.
private final class DeadlineRace<Result: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Result, any Error>?
        /// Set before `start` when the caller was cancelled before the race began.
        var outcome: Swift.Result<Result, any Error>?
        var tasks: [Task<Void, Never>] = []
        var finished = false
        var started = false
        /// The caller was cancelled after the start: the work is cancelled (now, or when held).
        var workCancelled = false
    }

    private let state = Mutex(State())
    private let liftedByStart: Bool

    init(liftedByStart: Bool) {
        self.liftedByStart = liftedByStart
    }

    /// The operation got what it waited for; false when the race was already decided.
    func markStarted() -> Bool {
        state.withLock { state in
            guard !state.finished else { return false }
            state.started = true
            return true
        }
    }

    func start(_ continuation: CheckedContinuation<Result, any Error>) {
        let early: Swift.Result<Result, any Error>? = state.withLock { state in
            if state.finished { return state.outcome }
            state.continuation = continuation
            return nil
        }
        if let early { continuation.resume(with: early) }
    }

    func hold(work: Task<Void, Never>, timer: Task<Void, Never>) {
        let (finished, cancelWork) = state.withLock { state in
            state.tasks = [work, timer]
            return (state.finished, state.workCancelled)
        }
        if finished {
            work.cancel()
            timer.cancel()
        } else if cancelWork {
            work.cancel()
        }
    }

    /// The deadline passed: it decides the race unless the start lifted it.
    func expire(_ error: DeadlineExceeded) {
        finish(.failure(error), unlessStarted: liftedByStart)
    }

    /// The caller was cancelled: before the start (or without one) that ends the wait; after it,
    /// the work is cancelled and the caller waits for it to end. Decided under the one lock that
    /// `markStarted` takes, so a start at the same moment is either before (the work is
    /// cancelled) or after (the caller is answered and `started` says false).
    func cancelledByCaller() {
        let (work, answer) = state.withLock { state -> (Task<Void, Never>?, Answer?) in
            if liftedByStart, state.started, !state.finished {
                state.workCancelled = true
                return (state.tasks.first, nil)
            }
            return (nil, Self.decide(&state, .failure(CancellationError()), unlessStarted: false))
        }
        work?.cancel()
        answer?.deliver()
    }

    /// - Parameter unlessStarted: leave the race to the work once it has started.
    func finish(_ outcome: Swift.Result<Result, any Error>, unlessStarted: Bool = false) {
        state.withLock { Self.decide(&$0, outcome, unlessStarted: unlessStarted) }?.deliver()
    }

    /// Who to answer with what, and the tasks to cancel, once the race is decided.
    private struct Answer {
        var continuation: CheckedContinuation<Result, any Error>?
        var outcome: Swift.Result<Result, any Error>
        var tasks: [Task<Void, Never>]

        func deliver() {
            for task in tasks { task.cancel() }
            continuation?.resume(with: outcome)
        }
    }

    /// Decides the race with `outcome` unless it is decided already (or, `unlessStarted`, the
    /// work has started); the caller delivers the answer outside the lock.
    private static func decide(
        _ state: inout State, _ outcome: Swift.Result<Result, any Error>, unlessStarted: Bool
    ) -> Answer? {
        guard !state.finished, !(unlessStarted && state.started) else { return nil }
        state.finished = true
        state.outcome = outcome
        defer { state.continuation = nil }
        return Answer(continuation: state.continuation, outcome: outcome, tasks: state.tasks)
    }
}
