import Foundation
import HeraldAPIContract
import HeraldStore
import Logging
import ServiceLifecycle
import Synchronization

/// Live progress for every Server-Sent Events stream of this process: one poll of the database
/// per watched push, every `interval`, shared by all of that push's streams, however many.
///
/// Streams are bounded: at most `perApp` per app and `perProcess` in all (one more is refused
/// with 429 `too_many_streams`), and each ends after `lifetime` (a client follows on by
/// reconnecting or polling the status).
///
/// - Important: run it (a `Service`): the polls are its child tasks.
final class PushProgressHub: Service, Sendable {
    struct Limits: Sendable {
        var perApp: Int
        var perProcess: Int
        var lifetime: Duration
        var interval: Duration = .milliseconds(500)
        var keepAlive: Duration = .seconds(15)
    }

    /// What a stream carries.
    enum Event: Sendable, Equatable {
        /// The push's `PushStatus` JSON, when it changed (and at once for a new stream).
        case progress([UInt8])
        /// Nothing changed for a while.
        case keepAlive
    }

    private struct Subscriber {
        var continuation: AsyncStream<Event>.Continuation
        var endsAt: ContinuousClock.Instant
    }

    private struct Watch {
        var appID: UUID
        var subscribers: [Int: Subscriber] = [:]
        var latest: [UInt8]?
        var lastSent = ContinuousClock.now
    }

    private struct State {
        var watches: [UUID: Watch] = [:]
        var streamsPerApp: [UUID: Int] = [:]
        var streams = 0
        var nextSubscriber = 0

        /// Forgets a stream; returns its continuation (nil if it was gone already) to finish
        /// outside the lock.
        mutating func remove(_ subscriber: Int, pushID: UUID) -> AsyncStream<Event>.Continuation? {
            guard let appID = watches[pushID]?.appID,
                let removed = watches[pushID]?.subscribers.removeValue(forKey: subscriber)
            else { return nil }
            streams -= 1
            streamsPerApp[appID, default: 1] -= 1
            if streamsPerApp[appID] == 0 { streamsPerApp[appID] = nil }
            return removed.continuation
        }
    }

    let limits: Limits
    private let pushes: PushRepository
    private let logger: Logger
    private let state = Mutex(State())
    private let newWatches: AsyncStream<UUID>
    private let newWatchesContinuation: AsyncStream<UUID>.Continuation
    /// Database polls made (one per watched push per interval).
    let polls = Atomic<Int>(0)

    init(pushes: PushRepository, limits: Limits, logger: Logger) {
        self.pushes = pushes
        self.limits = limits
        self.logger = logger
        (newWatches, newWatchesContinuation) = AsyncStream.makeStream()
    }

    /// Streams open now.
    var streams: Int { state.withLock { $0.streams } }

    func run() async throws {
        await withDiscardingTaskGroup { group in
            group.addTask {
                try? await gracefulShutdown()
                self.newWatchesContinuation.finish()
                self.endAll()
            }
            for await pushID in newWatches {
                group.addTask { await self.watch(pushID) }
            }
        }
    }

    /// A new stream of `pushID`'s progress (the caller checked that the push is `appID`'s).
    /// - Throws: ``APIError`` 429 `too_many_streams` past the limits.
    func subscribe(pushID: UUID, appID: UUID) throws(APIError) -> AsyncStream<Event> {
        let (stream, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(8))
        let limits = self.limits
        let outcome = state.withLock { state -> (subscriber: Int, newWatch: Bool, latest: [UInt8]?)? in
            guard state.streams < limits.perProcess, state.streamsPerApp[appID, default: 0] < limits.perApp else {
                return nil
            }
            state.streams += 1
            state.streamsPerApp[appID, default: 0] += 1
            state.nextSubscriber += 1
            let subscriber = state.nextSubscriber
            let newWatch = state.watches[pushID] == nil
            var watch = state.watches[pushID] ?? Watch(appID: appID)
            watch.subscribers[subscriber] = Subscriber(
                continuation: continuation, endsAt: .now + limits.lifetime)
            state.watches[pushID] = watch
            return (subscriber, newWatch, watch.latest)
        }
        guard let outcome else {
            continuation.finish()
            throw .tooManyRequests(
                "this herald-api serves at most \(limits.perApp) live progress streams per app and \(limits.perProcess) in all; poll GET /v1/pushes/{id} instead, or close a stream",
                code: .tooManyStreams, retryAfterSeconds: 5)
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.remove(outcome.subscriber, pushID: pushID) }
        }
        if let latest = outcome.latest { continuation.yield(.progress(latest)) }
        if outcome.newWatch { newWatchesContinuation.yield(pushID) }
        return stream
    }

    /// Polls one push while anybody watches it: sends each change to every stream, keep-alives
    /// when nothing changed for a while, ends streams past their lifetime, and ends them all
    /// after the push completed or was canceled.
    private func watch(_ pushID: UUID) async {
        var first = true
        while !Task.isCancelled {
            if !first { try? await Task.sleep(for: limits.interval) }
            first = false
            // Forget the watch when nobody is left (a newcomer then starts a new one).
            guard
                let appID = state.withLock({ state -> UUID? in
                    guard let watch = state.watches[pushID] else { return nil }
                    if watch.subscribers.isEmpty {
                        state.watches[pushID] = nil
                        return nil
                    }
                    return watch.appID
                })
            else { return }
            polls.add(1, ordering: .relaxed)
            let progress: PushProgress?
            do {
                progress = try await pushes.progress(id: pushID, appID: appID)
            } catch {
                logger.debug(
                    "live progress poll failed; trying again",
                    metadata: ["push": "\(pushID)", "error": "\(HeraldDatabase.describe(error))"])
                continue
            }
            let json = progress.flatMap { try? Self.statusJSON($0) }
            let over = progress.map { $0.push.state == .completed || $0.push.state == .canceled } ?? true
            let now = ContinuousClock.now
            let ending: [AsyncStream<Event>.Continuation] = state.withLock { state in
                guard var watch = state.watches[pushID] else { return [] }
                var ending: [AsyncStream<Event>.Continuation] = []
                if let json, json != watch.latest {
                    watch.latest = json
                    watch.lastSent = now
                    for subscriber in watch.subscribers.values { subscriber.continuation.yield(.progress(json)) }
                } else if now - watch.lastSent >= limits.keepAlive {
                    watch.lastSent = now
                    for subscriber in watch.subscribers.values { subscriber.continuation.yield(.keepAlive) }
                }
                state.watches[pushID] = watch
                for (id, subscriber) in watch.subscribers where over || subscriber.endsAt <= now {
                    if let continuation = state.remove(id, pushID: pushID) { ending.append(continuation) }
                }
                if over { state.watches[pushID] = nil }
                return ending
            }
            // Outside the lock: finishing runs each stream's onTermination.
            for continuation in ending { continuation.finish() }
            if over { return }
        }
    }

    /// Ends every stream (at shutdown).
    private func endAll() {
        let all = state.withLock { state -> [AsyncStream<Event>.Continuation] in
            defer {
                state.watches.removeAll()
                state.streamsPerApp.removeAll()
                state.streams = 0
            }
            return state.watches.values.flatMap { $0.subscribers.values.map(\.continuation) }
        }
        for continuation in all { continuation.finish() }
    }

    static func statusJSON(_ progress: PushProgress) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        return Array(try encoder.encode(Components.Schemas.PushStatus(progress)))
    }
}
