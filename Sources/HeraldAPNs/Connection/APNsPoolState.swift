import HeraldHTTP2
import NIOCore

/// A stream on a connection, lent to one send.
struct APNsLease: Sendable {
    let slot: Int
    let connection: HTTP2ClientConnection
}

/// The pool's bookkeeping, kept under one lock: which connection may take another stream, how
/// much is in flight, who waits. Methods return what to resume; resuming happens outside the lock.
struct APNsPoolState {
    struct Slot {
        var connection: HTTP2ClientConnection?
        /// Streams lent out on `connection`.
        var inUse = 0
        /// A request on this connection got past authentication: the server's own stream limit
        /// applies from now on (before, 1: Apple's limit until the first success).
        var authenticated = false
        /// This connection's provider token (as the `authorization` value, "bearer …") and when
        /// it was issued.
        var token: (value: String, issuedAt: Int64)?
        var tokenExpired = false
    }

    /// Someone waiting for a stream: called, outside the lock, with a lease or with nil when
    /// there is no connection (or the client stopped).
    typealias Waiter = @Sendable (APNsLease?) -> Void

    /// A waiter in its queue, with the id its send may withdraw it by (``cancelWait(_:)``).
    struct Waiting {
        let id: UInt64
        let waiter: Waiter
    }

    var slots: [Slot]
    var inFlight = 0
    let maxInFlight: Int
    var waiters = CircularBuffer<Waiting>()
    /// Those waiting for a stream for an urgent send (a transactional push's batch): served
    /// before `waiters`, and while any waits no other send takes a free stream.
    var urgentWaiters = CircularBuffer<Waiting>()
    private var nextWaiterID: UInt64 = 0
    var stopped = false
    /// Those waiting until the line is at least this long (``APNsClient/waitUntilWaiting(_:)``).
    var lineWatchers: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []

    /// Sends in line now, urgent or not.
    var inLine: Int { urgentWaiters.count + waiters.count }

    /// The line watchers the line's length now satisfies, taken.
    mutating func satisfiedLineWatchers() -> [CheckedContinuation<Void, Never>] {
        let length = inLine
        let satisfied = lineWatchers.filter { $0.count <= length }.map(\.continuation)
        lineWatchers.removeAll { $0.count <= length }
        return satisfied
    }

    init(connections: Int, maxInFlight: Int) {
        slots = Array(repeating: Slot(), count: connections)
        self.maxInFlight = maxInFlight
    }

    /// Streams `slot` may still take.
    func room(_ slot: Slot) -> Int {
        guard let connection = slot.connection, connection.isAcceptingRequests else { return 0 }
        let limit = slot.authenticated ? connection.maxConcurrentStreams : min(1, connection.maxConcurrentStreams)
        return limit - slot.inUse
    }

    /// A stream on the connection with the most room, if any and if in-flight allows.
    mutating func tryLease(urgent: Bool = false) -> APNsLease? {
        tryLease(upTo: 1, urgent: urgent)?.lease
    }

    /// Up to `count` streams on the connection with the most room, if any and if in-flight
    /// allows: one lease, and how many streams it stands for (each is released on its own).
    /// A send that is not `urgent` gets none while an urgent one waits.
    mutating func tryLease(upTo count: Int, urgent: Bool = false) -> (lease: APNsLease, streams: Int)? {
        guard count > 0, !stopped, inFlight < maxInFlight, urgent || urgentWaiters.isEmpty else { return nil }
        var best = -1
        var bestRoom = 0
        for index in slots.indices {
            let room = room(slots[index])
            if room > bestRoom {
                best = index
                bestRoom = room
            }
        }
        guard best >= 0, let connection = slots[best].connection else { return nil }
        let streams = min(count, bestRoom, maxInFlight - inFlight)
        slots[best].inUse += streams
        inFlight += streams
        return (APNsLease(slot: best, connection: connection), streams)
    }

    /// Gives a stream back; `authenticated` when the answer showed the credential was accepted.
    mutating func release(_ lease: APNsLease, authenticated: Bool) -> [(Waiter, APNsLease?)] {
        inFlight -= 1
        if slots[lease.slot].connection === lease.connection {
            slots[lease.slot].inUse -= 1
            if authenticated { slots[lease.slot].authenticated = true }
        }
        return wakeWaiters()
    }

    /// Leases for as many waiters as there is room for: urgent ones first, each queue oldest first.
    mutating func wakeWaiters() -> [(Waiter, APNsLease?)] {
        var woken: [(Waiter, APNsLease?)] = []
        while !urgentWaiters.isEmpty, let lease = tryLease(urgent: true) {
            woken.append((urgentWaiters.removeFirst().waiter, lease))
        }
        while !waiters.isEmpty, let lease = tryLease() {
            woken.append((waiters.removeFirst().waiter, lease))
        }
        return woken
    }

    /// Registers `waiter` in its queue; returns the id that withdraws it.
    @discardableResult
    mutating func wait(_ waiter: @escaping Waiter, urgent: Bool) -> UInt64 {
        nextWaiterID += 1
        let waiting = Waiting(id: nextWaiterID, waiter: waiter)
        if urgent { urgentWaiters.append(waiting) } else { waiters.append(waiting) }
        return waiting.id
    }

    /// Withdraws the waiter `id` (its send stopped): it will not be called. Returns whether it
    /// still waited, and the waiters its leaving lets lease (an urgent one held the others back).
    mutating func cancelWait(_ id: UInt64) -> (withdrawn: Bool, woken: [(Waiter, APNsLease?)]) {
        if let index = urgentWaiters.firstIndex(where: { $0.id == id }) {
            urgentWaiters.remove(at: index)
            return (true, wakeWaiters())
        }
        if let index = waiters.firstIndex(where: { $0.id == id }) {
            waiters.remove(at: index)
            return (true, [])
        }
        return (false, [])
    }

    /// Every waiter, to be told there is no connection (or the client stopped).
    mutating func failWaiters() -> [(Waiter, APNsLease?)] {
        var failed: [(Waiter, APNsLease?)] = []
        while !urgentWaiters.isEmpty { failed.append((urgentWaiters.removeFirst().waiter, nil)) }
        while !waiters.isEmpty { failed.append((waiters.removeFirst().waiter, nil)) }
        return failed
    }

    var hasLiveConnection: Bool { slots.contains { $0.connection?.isAcceptingRequests == true } }
}
