import Foundation
import HeraldDomain
import Logging
import PostgresNIO
import Synchronization

/// Stores new pushes (each with its counters row and its announcement in the outbox) for many
/// concurrent requests, several pushes to a statement: PostgreSQL's cost per push is mostly the
/// statement and its commit, not the rows, so under load pushes that arrive together are
/// written together.
///
/// No timer and no task of its own: the first callers (up to ``maximumWriters``) write at once —
/// alone when nothing else is waiting, so an idle server adds no delay. Callers that arrive while
/// all writers are busy wait; a writer that finishes hands the turn to the oldest of them, which
/// writes everything waiting (up to ``maximumBatch``) in one statement. A batch that fails is
/// written again one push at a time, so one bad push cannot fail its neighbours. A caller
/// cancelled while it waits (its request timed out) leaves the line at once, its push unwritten;
/// every statement gives up after ``HeraldDatabase/answerWithin``, so a stuck one holds no line
/// for ever.
public final class PushWriter: Sendable {
    /// Statements in flight at once.
    public let maximumWriters: Int
    /// Pushes in one statement, at most.
    public let maximumBatch: Int
    private let repository: PushRepository
    private let state = Mutex(State())
    private let statementCount = Atomic<Int>(0)

    /// Statements written so far (a batch that failed and was written again one by one counts
    /// each of them).
    public var statements: Int { statementCount.load(ordering: .relaxed) }

    /// Returns once `count` pushes (or more) wait for a writer; for tests of the line.
    public func waitUntilWaiting(_ count: Int) async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state in
                if state.waiting.count >= count { return true }
                state.lineWatchers.append((count, continuation))
                return false
            }
            if now { continuation.resume() }
        }
    }

    private struct State {
        var writers = 0
        var waiting: [Waiting] = []
        /// ``waitUntilWaiting(_:)``'s callers, with the line's length each waits for.
        var lineWatchers: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []

        /// The watchers the line's length now satisfies, taken.
        mutating func satisfiedWatchers() -> [CheckedContinuation<Void, Never>] {
            let satisfied = lineWatchers.filter { $0.count <= waiting.count }.map(\.continuation)
            lineWatchers.removeAll { $0.count <= waiting.count }
            return satisfied
        }
    }

    private struct Waiting {
        var entry: Entry
        var continuation: CheckedContinuation<Turn, Never>
        var caller: Caller
    }

    /// One call of ``create(_:announcement:)``, for its cancellation: a caller cancelled while it
    /// waits for its turn stops waiting (its push is not written); one cancelled before it got in
    /// line does not get in line. Locked only inside `state`'s lock, or alone.
    private final class Caller: Sendable {
        enum Phase { case arriving, cancelledOnArrival, inLine, served }
        let phase = Mutex(Phase.arriving)
    }

    struct Entry: Sendable {
        var push: NewPush
        var announcement: PushRepository.OutboxDraft
    }

    private enum Turn {
        /// Another caller wrote it: its creation time, or nil when its idempotency key was taken.
        case written(Result<Date?, any Error>)
        /// This caller writes now, taking what waits with it.
        case write
    }

    public init(client: PostgresClient, logger: Logger, maximumWriters: Int = 4, maximumBatch: Int = 64) {
        repository = PushRepository(client: client, logger: logger)
        self.maximumWriters = max(1, maximumWriters)
        self.maximumBatch = max(1, maximumBatch)
    }

    /// Stores `push` with its counters and `announcement` (the outbox record the relay publishes)
    /// in one transaction, possibly together with other callers' pushes.
    /// - Returns: the push as stored and true; or, when the app already used its idempotency
    ///   key, the first push with that key and false.
    public func create(_ push: NewPush, announcement: PushRepository.OutboxDraft) async throws -> (
        push: Push, created: Bool
    ) {
        if push.split != nil {
            // An A/B test is rare and carries its variants' payloads, which the statement for many
            // pushes does not: written on its own.
            return try await repository.answer(push, createdAt: repository.insert(push, announcement: announcement))
        }
        let entry = Entry(push: push, announcement: announcement)
        let caller = Caller()
        let turn: Turn = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                enum Arrival { case write, wait, cancelled }
                var watchers: [CheckedContinuation<Void, Never>] = []
                let arrival = state.withLock { state -> Arrival in
                    caller.phase.withLock { phase in
                        if phase == .cancelledOnArrival { return .cancelled }
                        if state.writers < maximumWriters {
                            state.writers += 1
                            phase = .served
                            return .write
                        }
                        state.waiting.append(Waiting(entry: entry, continuation: continuation, caller: caller))
                        phase = .inLine
                        watchers = state.satisfiedWatchers()
                        return .wait
                    }
                }
                for watcher in watchers { watcher.resume() }
                switch arrival {
                case .write: continuation.resume(returning: .write)
                case .cancelled: continuation.resume(returning: .written(.failure(CancellationError())))
                case .wait: break
                }
            }
        } onCancel: {
            let left = state.withLock { state -> Waiting? in
                caller.phase.withLock { phase in
                    switch phase {
                    case .arriving:
                        phase = .cancelledOnArrival
                        return nil
                    case .inLine:
                        guard let index = state.waiting.firstIndex(where: { $0.caller === caller }) else { return nil }
                        phase = .served
                        return state.waiting.remove(at: index)
                    case .cancelledOnArrival, .served:
                        return nil
                    }
                }
            }
            left?.continuation.resume(returning: .written(.failure(CancellationError())))
        }
        let createdAt: Date?
        switch turn {
        case .written(let result):
            createdAt = try result.get()
        case .write:
            createdAt = try await writeWithWaiting(entry)
        }
        return try await repository.answer(push, createdAt: createdAt)
    }

    /// Writes `own` and what waits, answers the others, then passes the turn on (or gives the
    /// writer's place back when nobody waits).
    private func writeWithWaiting(_ own: Entry) async throws -> Date? {
        let others = state.withLock { state in
            let taken = Array(state.waiting.prefix(maximumBatch - 1))
            state.waiting.removeFirst(taken.count)
            for waiting in taken { waiting.caller.phase.withLock { $0 = .served } }
            return taken
        }
        let results = await write([own] + others.map(\.entry))
        for (index, waiting) in others.enumerated() {
            waiting.continuation.resume(returning: .written(results[index + 1]))
        }
        let next = state.withLock { state -> Waiting? in
            guard !state.waiting.isEmpty else {
                state.writers -= 1
                return nil
            }
            let next = state.waiting.removeFirst()
            next.caller.phase.withLock { $0 = .served }
            return next
        }
        next?.continuation.resume(returning: .write)
        return try results[0].get()
    }

    /// One statement for all of `entries`; one each if that fails.
    private func write(_ entries: [Entry]) async -> [Result<Date?, any Error>] {
        statementCount.add(1, ordering: .relaxed)
        if entries.count == 1 {
            return [
                await Result { try await repository.insert(entries[0].push, announcement: entries[0].announcement) }
            ]
        }
        do {
            let created = try await repository.insert(entries)
            return entries.map { .success(created[$0.push.id]) }
        } catch {
            var results: [Result<Date?, any Error>] = []
            statementCount.add(entries.count, ordering: .relaxed)
            for entry in entries {
                results.append(
                    await Result { try await repository.insert(entry.push, announcement: entry.announcement) })
            }
            return results
        }
    }
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do {
            self = .success(try await body())
        } catch {
            self = .failure(error)
        }
    }
}
