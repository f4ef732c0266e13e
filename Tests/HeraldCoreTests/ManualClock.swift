import Synchronization

/// A clock whose time moves only when a test advances it: a deadline on it passes exactly when the
/// test says so, whatever the machine's speed.
final class ManualClock: Clock, Sendable {
    struct Instant: InstantProtocol {
        var offset: Duration

        func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        func duration(to other: Instant) -> Duration { other.offset - offset }
        static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private struct Sleeper {
        let until: Instant
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var sleepers: [Int: Sleeper] = [:]
        var nextSleeper = 0
        /// Those waiting for a number of sleepers, with the number.
        var watchers: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Mutex(State())

    var now: Instant { state.withLock { $0.now } }
    var minimumResolution: Duration { .zero }

    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        let id = state.withLock { state in
            defer { state.nextSleeper += 1 }
            return state.nextSleeper
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (resumeNow, watchers) = state.withLock { state -> (Bool, [CheckedContinuation<Void, Never>]) in
                    if Task.isCancelled || deadline <= state.now { return (true, []) }
                    state.sleepers[id] = Sleeper(until: deadline, continuation: continuation)
                    return (false, Self.satisfiedWatchers(&state))
                }
                for watcher in watchers { watcher.resume() }
                if resumeNow {
                    continuation.resume(with: Task.isCancelled ? .failure(CancellationError()) : .success(()))
                }
            }
        } onCancel: {
            let (sleeper, watchers) = state.withLock { state in
                (state.sleepers.removeValue(forKey: id), Self.satisfiedWatchers(&state))
            }
            sleeper?.continuation.resume(throwing: CancellationError())
            for watcher in watchers { watcher.resume() }
        }
    }

    /// Moves time forward and wakes every sleeper whose instant has come.
    func advance(by duration: Duration) {
        let (woken, watchers) = state.withLock { state in
            state.now = state.now.advanced(by: duration)
            let now = state.now
            let due = state.sleepers.filter { $0.value.until <= now }
            for id in due.keys { state.sleepers[id] = nil }
            return (due.values.map(\.continuation), Self.satisfiedWatchers(&state))
        }
        for sleeper in woken { sleeper.resume() }
        for watcher in watchers { watcher.resume() }
    }

    /// Returns once exactly `count` sleepers wait on the clock.
    func waitForSleepers(_ count: Int) async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state in
                if state.sleepers.count == count { return true }
                state.watchers.append((count, continuation))
                return false
            }
            if now { continuation.resume() }
        }
    }

    private static func satisfiedWatchers(_ state: inout State) -> [CheckedContinuation<Void, Never>] {
        let count = state.sleepers.count
        let satisfied = state.watchers.filter { $0.count == count }.map(\.continuation)
        state.watchers.removeAll { $0.count == count }
        return satisfied
    }
}
