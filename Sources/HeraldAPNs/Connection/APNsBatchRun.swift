import HeraldHTTP2
import NIOCore
import Synchronization

/// What became of notifications sent together with ``APNsClient/send(_:urgent:)``.
public struct APNsBatchResult: Sendable {
    /// Each notification's outcome, in the order they were given.
    public var outcomes: [APNsOutcome]
    /// Milliseconds from each notification's sending to its answer (over its resends, if APNs
    /// asked for any); 0 for one never sent.
    public var latencies: [Double]
}

/// One call of ``APNsClient/send(_:urgent:)``: hands its notifications to the
/// client's connections as streams free up, and collects the answers.
///
/// Everything after ``start(_:)`` happens on the connections' event loops: an answer is read
/// there and gives its stream back; a run waiting for streams is handed them in a group
/// (``APNsPoolState/refillGroup``) and sends that group's notifications at once, once per
/// event-loop turn. A notification APNs' answer asks to send again (the
/// connection's token was renewed; APNs did not process it) goes back in the queue, within the
/// client's limits. The state is under one lock, never held while the pool's waiters are called
/// (one of them may be this run).
final class APNsBatchRun: Sendable {
    /// Where the run's sending is. A run starts `sending`; it is `waitingForStream` while it is
    /// registered with the pool for a free stream, back to `sending` when the pool hands one
    /// over; `stopped` for good once the caller was cancelled or the client has no connection
    /// (a stream the pool still hands over then goes straight back).
    enum Phase {
        case sending, waitingForStream, stopped
    }

    private struct State {
        /// Indexes of the notifications to send, in order; those sent again are appended.
        var queue: [Int]
        /// Position in `queue` of the next notification to send.
        var next = 0
        var unanswered: Int
        var outcomes: [APNsOutcome]
        var latencies: [Double]
        /// When each notification was last handed to its connection (uptime nanoseconds).
        var sentAt: [UInt64]
        /// Each one's count of resends so far (``APNsResendRule``).
        var resends: [APNsResendRule]
        var continuation: CheckedContinuation<Void, Never>?
        var phase = Phase.sending
        /// Streams the pool handed over, to be used by the next `pump()`.
        var handedOver: [APNsGrant] = []
        /// A `pump()` is due on an event loop.
        var pumpScheduled = false
        /// The run's waiter in the pool, while it waits for a stream.
        var waiterID: UInt64?

        var unsent: Int { queue.count - next }

        /// The pool answered the run's wait (with a stream, or with none to be had).
        mutating func streamHandedOver() {
            if phase == .waitingForStream { phase = .sending }
            waiterID = nil
        }

        /// The continuation, taken, once every notification has its outcome.
        mutating func continuationIfDone() -> CheckedContinuation<Void, Never>? {
            guard unanswered == 0 else { return nil }
            defer { continuation = nil }
            return continuation
        }
    }

    private let client: APNsClient
    /// An existential, not a generic parameter: the run's code is compiled once, in this
    /// module, and a generic run looked its own type's metadata up at run time on every answer.
    private let notifications: any APNsNotificationBatch
    /// Its streams come before other sends' (``APNsPoolState/urgentWaiters``).
    private let urgent: Bool
    private let state: Mutex<State>

    init(client: APNsClient, notifications: any APNsNotificationBatch, urgent: Bool = false) {
        self.client = client
        self.notifications = notifications
        self.urgent = urgent
        // Those with a problem (``APNsNotificationBatch/problem(at:)``) never leave; the rest are queued.
        var outcomes = [APNsOutcome](repeating: .failed(.invalid), count: notifications.count)
        let queue = (0..<notifications.count).filter { notifications.problem(at: $0) == nil }
        for index in queue { outcomes[index] = .failed(.notProcessed) }
        let count = notifications.count
        state = Mutex(
            State(
                queue: queue, unanswered: queue.count, outcomes: outcomes,
                latencies: Array(repeating: 0, count: count), sentAt: Array(repeating: 0, count: count),
                resends: Array(repeating: APNsResendRule(), count: count)))
    }

    /// The outcomes and latencies, once the continuation given to ``start(_:)`` was resumed.
    var result: APNsBatchResult {
        state.withLock { APNsBatchResult(outcomes: $0.outcomes, latencies: $0.latencies) }
    }

    /// Starts sending; `continuation` is resumed when every notification has its outcome.
    func start(_ continuation: CheckedContinuation<Void, Never>) {
        let done = state.withLock { state -> Bool in
            state.continuation = continuation
            return state.unanswered == 0
        }
        if done { continuation.resume() } else { pump() }
    }

    /// Sends no more; the notifications not sent yet end `clientStopped`.
    func stopSending() {
        finishUnsent(with: .clientStopped)
    }

    // MARK: Sending

    private enum Step {
        case send([(lease: APNsLease, indexes: ArraySlice<Int>)], surplus: [APNsLease])
        case noConnection
        case wait
    }

    /// Sends as many of the notifications left as there are free streams for: those the pool
    /// handed over, then any more it has.
    private func pump() {
        while true {
            let now = NIODeadline.now().uptimeNanoseconds
            let step = state.withLock { state -> Step in
                var grants = Self.grouped(state.handedOver)
                state.handedOver.removeAll()
                if state.phase == .stopped || state.unsent == 0 {
                    return .send([], surplus: grants.flatMap { Array(repeating: $0.lease, count: $0.streams) })
                }
                if grants.isEmpty {
                    if state.phase == .waitingForStream { return .wait }
                    switch client.lease(upTo: state.unsent, urgent: urgent, orWait: { [self] in self.woken($0) }) {
                    case .leased(let lease, let streams): grants = [(lease: lease, streams: streams)]
                    case .noConnection: return .noConnection
                    case .waiting(let id):
                        state.phase = .waitingForStream
                        state.waiterID = id
                        return .wait
                    }
                }
                var sends: [(lease: APNsLease, indexes: ArraySlice<Int>)] = []
                var surplus: [APNsLease] = []
                for (lease, streams) in grants {
                    let count = min(streams, state.unsent)
                    if count > 0 {
                        let indexes = state.queue[state.next..<(state.next + count)]
                        state.next += count
                        for index in indexes { state.sentAt[index] = now }
                        sends.append((lease, indexes))
                    }
                    surplus += Array(repeating: lease, count: streams - count)
                }
                return .send(sends, surplus: surplus)
            }
            switch step {
            case .wait:
                return
            case .noConnection:
                finishUnsent(with: client.isStopped ? .clientStopped : .noConnection)
                return
            case .send(let sends, let surplus):
                for lease in surplus { client.release(lease, authenticated: false) }
                if sends.isEmpty { return }
                for (lease, indexes) in sends { send(indexes, on: lease) }
            }
        }
    }

    /// Grants gathered per connection.
    private static func grouped(_ grants: [APNsGrant]) -> [(lease: APNsLease, streams: Int)] {
        var groups: [(lease: APNsLease, streams: Int)] = []
        for grant in grants {
            if let index = groups.firstIndex(where: {
                $0.lease.slot == grant.lease.slot && $0.lease.connection === grant.lease.connection
            }) {
                groups[index].streams += grant.streams
            } else {
                groups.append((grant.lease, grant.streams))
            }
        }
        return groups
    }

    /// Hands the notifications at `indexes` to the lease's connection in one go; each request is
    /// written when the connection submits it, straight from the notification.
    private func send(_ indexes: ArraySlice<Int>, on lease: APNsLease) {
        let authorization = client.providerToken(for: lease)
        lease.connection.submit(
            Array(indexes), timeout: client.requestTimeout,
            compose: { [self] index, block in
                self.notifications.writeRequest(
                    at: index, authority: self.client.authority, authorization: authorization, into: &block)
            },
            onResponse: { [self] index, result in
                self.answered(index, result, on: lease)
            })
    }

    /// An answer, on the connection's event loop.
    private func answered(_ index: Int, _ result: Result<HTTP2Response, any Error>, on lease: APNsLease) {
        let answer = client.answer(result, on: lease)
        let now = NIODeadline.now().uptimeNanoseconds
        let resendLimit = client.configuration.unprocessedResends
        let (finished, pumpNow) = state.withLock { state -> (CheckedContinuation<Void, Never>?, Bool) in
            state.latencies[index] += Double(now &- state.sentAt[index]) / 1e6
            if state.phase != .stopped, state.resends[index].sendsAgain(for: answer.sendAgain, limit: resendLimit) {
                state.queue.append(index)
            } else {
                state.outcomes[index] = answer.outcome
                state.unanswered -= 1
                if let finished = state.continuationIfDone() { return (finished, false) }
            }
            // One pump per event-loop turn, after the answers read in it.
            guard state.phase == .sending, state.unsent > 0, !state.pumpScheduled else { return (nil, false) }
            state.pumpScheduled = true
            return (nil, true)
        }
        finished?.resume()
        if pumpNow { schedulePump(on: lease.connection.eventLoop) }
    }

    /// Runs `pump()` on `eventLoop` after what it is doing now (reading a burst of answers).
    private func schedulePump(on eventLoop: any EventLoop) {
        eventLoop.execute {
            self.state.withLock { $0.pumpScheduled = false }
            self.pump()
        }
    }

    /// The pool handed over streams (kept for the next pump, so that a burst of freed streams
    /// goes out in one group), or said there are none to be had.
    private func woken(_ grant: APNsGrant?) {
        guard let grant else {
            state.withLock { $0.streamHandedOver() }
            finishUnsent(with: client.isStopped ? .clientStopped : .noConnection)
            return
        }
        enum Use { case keep, pump, giveBack }
        let use = state.withLock { state -> Use in
            state.streamHandedOver()
            // Stopped (the caller was cancelled) with nothing left to send: the stream goes back
            // now, not on a later pump — the caller may already have every outcome and count
            // the client's streams in flight.
            if state.phase == .stopped || state.unsent == 0 { return .giveBack }
            state.handedOver.append(grant)
            guard !state.pumpScheduled else { return .keep }
            state.pumpScheduled = true
            return .pump
        }
        switch use {
        case .giveBack:
            for _ in 0..<grant.streams { client.release(grant.lease, authenticated: false) }
        case .pump: schedulePump(on: grant.lease.connection.eventLoop)
        case .keep: break
        }
    }

    /// Ends every notification not sent yet with `failure`, and gives back the streams the pool
    /// handed over for them: ``APNsClient/send(_:urgent:)`` returns only when the run holds no
    /// stream (a stream handed over and left for a pump that was still to come was once counted
    /// in flight after the cancelled send had returned).
    /// Its waiter, if it still waits, leaves the pool's queue too: a stopped urgent run held
    /// every other send's streams back until one was handed to it.
    private func finishUnsent(with failure: APNsTransportFailure) {
        let (finished, unused, waiter) = state.withLock {
            state -> (CheckedContinuation<Void, Never>?, [APNsGrant], UInt64?) in
            state.phase = .stopped
            let unused = state.handedOver
            state.handedOver.removeAll()
            let waiter = state.waiterID
            state.waiterID = nil
            guard state.unsent > 0 else { return (nil, unused, waiter) }
            for index in state.queue[state.next...] { state.outcomes[index] = .failed(failure) }
            state.unanswered -= state.unsent
            state.next = state.queue.count
            return (state.continuationIfDone(), unused, waiter)
        }
        // Withdrawn, it is never called; already called, `woken` gives its stream back.
        if let waiter { client.cancelWait(waiter) }
        for grant in unused {
            for _ in 0..<grant.streams { client.release(grant.lease, authenticated: false) }
        }
        finished?.resume()
    }
}
