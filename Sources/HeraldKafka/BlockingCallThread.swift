import Foundation

/// One operating-system thread that runs librdkafka's blocking calls, one after another.
///
/// Timed polls, flushes, commits and closes block the calling thread for up to their timeout.
/// Running them on Swift's cooperative thread pool would starve every other task of one of its
/// few threads (two on this class of machine), so each Kafka client owns one of these threads
/// and awaits its calls from async code. The queue holds at most one entry per waiting caller.
///
/// - Important: call ``stop()`` when the client is done; the thread ends once the queue is empty.
final class BlockingCallThread: @unchecked Sendable {
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var jobs: [() -> Void] = []
    private var stopped = false

    init(name: String) {
        let thread = Thread { [self] in self.serve() }
        thread.name = name
        thread.start()
    }

    /// Runs `body` on the thread and returns its result.
    /// - Throws: what `body` throws, or ``KafkaError`` `shutDown` if the thread was stopped.
    func run<Result: Sendable>(_ body: @escaping @Sendable () throws -> Result) async throws -> Result {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Result, Error>) in
            let accepted = enqueue {
                continuation.resume(with: Swift.Result { try body() })
            }
            if !accepted {
                continuation.resume(throwing: KafkaError.shutDown)
            }
        }
    }

    /// Lets the thread finish the calls already queued, then end.
    func stop() {
        condition.lock()
        stopped = true
        condition.signal()
        condition.unlock()
    }

    private func enqueue(_ job: @escaping () -> Void) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        if stopped { return false }
        jobs.append(job)
        condition.signal()
        return true
    }

    private func serve() {
        while true {
            condition.lock()
            while jobs.isEmpty && !stopped {
                condition.wait()
            }
            if jobs.isEmpty && stopped {
                condition.unlock()
                return
            }
            let batch = jobs
            jobs.removeAll(keepingCapacity: true)
            condition.unlock()
            for job in batch { job() }
        }
    }
}
