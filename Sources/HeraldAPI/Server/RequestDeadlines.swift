import Foundation
import OpenAPIRuntime
import ServiceLifecycle
import Synchronization

/// Cancels operations that run past their deadline (the database unreachable or stuck), so the
/// caller gets a 503 instead of waiting on postgres-nio's pool for a minute.
///
/// Cheaper than racing every request against a timer: a request registers its task (a child
/// task of its own, so cancelling it never touches the connection's task) with its deadline,
/// and one watchdog (``run()``, a `Service` of the application) looks every 100 ms for overdue
/// ones.
final class RequestDeadlines: Service, Sendable {
    private struct Entry: @unchecked Sendable {
        // Valid while the entry is registered: the task removes it (under the lock) before it
        // ends, and the watchdog cancels only under the lock.
        let task: UnsafeCurrentTask
        let deadline: ContinuousClock.Instant
        var expired = false
    }

    private struct State {
        var next = 0
        var entries: [Int: Entry] = [:]
    }

    let timeout: Duration
    private let state = Mutex(State())

    init(timeout: Duration) {
        self.timeout = timeout
    }

    /// `body`'s result, or ``APIError/timedOut`` when it ran past the deadline — `timeout`, or
    /// this watchdog's — (it is then canceled).
    func guarding<Result: Sendable>(timeout: Duration? = nil, _ body: @escaping @Sendable () async throws -> Result)
        async throws -> Result
    {
        try await withThrowingTaskGroup(of: Result.self) { group in
            group.addTask {
                let id: Int? = withUnsafeCurrentTask { task in
                    guard let task else { return nil }
                    return self.state.withLock { state in
                        state.next += 1
                        state.entries[state.next] = Entry(task: task, deadline: .now + (timeout ?? self.timeout))
                        return state.next
                    }
                }
                do {
                    let result = try await body()
                    if let id { _ = self.state.withLock { $0.entries.removeValue(forKey: id) } }
                    return result
                } catch {
                    let expired =
                        id.map { id in self.state.withLock { $0.entries.removeValue(forKey: id)?.expired ?? false } }
                        ?? false
                    throw expired && !Self.isUnavailableAnswer(error) ? APIError.timedOut : error
                }
            }
            return try await group.next()!
        }
    }

    /// Whether `error` is the operation's own answer that the database is unreachable (the
    /// readiness probe's, when its shorter deadline passed): more precise than "timed out", and
    /// kept when the watchdog cancelled the operation late — on a starved machine it can pass a
    /// nested deadline and this one in the same look. Any other error past the deadline is a
    /// timeout.
    private static func isUnavailableAnswer(_ error: any Error) -> Bool {
        let cause = (error as? ServerError)?.underlyingError ?? error
        return (cause as? APIError)?.code == .databaseUnavailable
    }

    /// The watchdog.
    func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            try? await Task.sleep(for: .milliseconds(100))
            let now = ContinuousClock.now
            state.withLock { state in
                for (id, entry) in state.entries where !entry.expired && entry.deadline < now {
                    state.entries[id]?.expired = true
                    entry.task.cancel()
                }
            }
        }
    }
}
