import HeraldCore
import Synchronization

/// The outbox relay's alarm clock: its wait between rounds ends at the interval or as soon as
/// PostgreSQL says records were added, whichever comes first. A signal that arrives while the
/// relay is publishing is kept, so the next wait ends at once and nothing waits for the interval.
///
/// One waiter at a time (the relay's loop); any number of signallers.
final class OutboxWakeup: Sendable {
    private struct State {
        var signalled = false
        var waiter: CheckedContinuation<Void, Never>?
        /// The current wait was given up (its interval passed, or shutdown) before it was signalled.
        var abandoned = false
    }

    private let state = Mutex(State())

    init() {}

    /// Whether a wait is under way and not signalled yet (for tests).
    var isWaiting: Bool { state.withLock { $0.waiter != nil } }

    /// Ends the current wait, or the next one if none is waiting.
    func signal() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.signalled = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// How a wait ended.
    enum Ending: Equatable {
        case signalled
        /// The interval passed (or the process is shutting down).
        case interval
    }

    /// Returns at the first signal since the last wait returned, after `interval`, or at graceful
    /// shutdown or cancellation.
    @discardableResult
    func wait(upTo interval: Duration) async -> Ending {
        await wait { await sleepUntilGracefulShutdown(for: interval) }
    }

    /// Returns at the first signal since the last wait returned, or when `interval` returns
    /// (it must return when cancelled).
    func wait(interval: @escaping @Sendable () async -> Void) async -> Ending {
        await withTaskGroup(of: Ending.self) { group in
            group.addTask {
                await interval()
                return .interval
            }
            group.addTask {
                await self.signalled()
                return .signalled
            }
            let first = await group.next() ?? .interval
            group.cancelAll()
            return first
        }
    }

    /// Returns once signalled, or when the task is cancelled.
    private func signalled() async {
        state.withLock { $0.abandoned = false }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let now = state.withLock { state -> Bool in
                    if state.signalled || state.abandoned {
                        state.signalled = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                state.abandoned = true
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }
    }
}
