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
/// - Throws: what `operation` throws, ``DeadlineExceeded``, or `CancellationError` when the
///   calling task is cancelled first.
public func withDeadline<Result: Sendable>(
    _ limit: Duration,
    _ operation: @escaping @Sendable () async throws -> Result
) async throws -> Result {
    try await race(limit, whenStarted: .keepsTheDeadline) { _ in try await operation() }
}

/// Runs `operation`, which must call the `started` it is given within `limit` (it got what it
/// waited for: a connection from a pool); from then on it may run as long as it needs. When
/// `started` was not called in time, the caller goes on with ``DeadlineExceeded`` and the
/// operation is cancelled and left to end by itself, as with ``withDeadline(_:_:)`` — a pool
/// need not react to cancellation for the caller to be free.
///
/// For work that waits for a resource and is then bounded otherwise: a device import waits for
/// its connection a few seconds at most, then runs as long as its upload, which is paced.
///
/// - Throws: what `operation` throws, ``DeadlineExceeded``, or `CancellationError` when the
///   calling task is cancelled first.
public func withStartDeadline<Result: Sendable>(
    _ limit: Duration,
    _ operation: @escaping @Sendable (_ started: @escaping @Sendable () -> Void) async throws -> Result
) async throws -> Result {
    try await race(limit, whenStarted: .liftsTheDeadline, operation)
}

private enum DeadlineKind {
    case keepsTheDeadline, liftsTheDeadline
}

private func race<Result: Sendable>(
    _ limit: Duration, whenStarted kind: DeadlineKind,
    _ operation: @escaping @Sendable (_ started: @escaping @Sendable () -> Void) async throws -> Result
) async throws -> Result {
    let race = DeadlineRace<Result>()
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
                try? await Task.sleep(for: limit)
                if kind == .liftsTheDeadline, race.hasStarted { return }
                race.finish(.failure(DeadlineExceeded(limit: limit)))
            }
            race.hold(work: work, timer: timer)
        }
    } onCancel: {
        race.finish(.failure(CancellationError()))
    }
}

/// The first of an operation's result, its deadline and the caller's cancellation resumes the
/// caller; whatever comes later is dropped, and both tasks are cancelled.
private final class DeadlineRace<Result: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Result, any Error>?
        /// Set before `start` when the caller was cancelled before the race began.
        var outcome: Swift.Result<Result, any Error>?
        var tasks: [Task<Void, Never>] = []
        var finished = false
    }

    private let state = Mutex(State())
    private let started = Atomic<Bool>(false)

    /// The operation got what it waited for (``withStartDeadline(_:_:)``).
    func markStarted() { started.store(true, ordering: .releasing) }

    var hasStarted: Bool { started.load(ordering: .acquiring) }

    func start(_ continuation: CheckedContinuation<Result, any Error>) {
        let early: Swift.Result<Result, any Error>? = state.withLock { state in
            if state.finished { return state.outcome }
            state.continuation = continuation
            return nil
        }
        if let early { continuation.resume(with: early) }
    }

    func hold(work: Task<Void, Never>, timer: Task<Void, Never>) {
        let finished = state.withLock { state in
            state.tasks = [work, timer]
            return state.finished
        }
        if finished {
            work.cancel()
            timer.cancel()
        }
    }

    func finish(_ outcome: Swift.Result<Result, any Error>) {
        let (continuation, tasks): (CheckedContinuation<Result, any Error>?, [Task<Void, Never>]) = state.withLock {
            state in
            guard !state.finished else { return (nil, []) }
            state.finished = true
            state.outcome = outcome
            defer { state.continuation = nil }
            return (state.continuation, state.tasks)
        }
        for task in tasks { task.cancel() }
        continuation?.resume(with: outcome)
    }
}
