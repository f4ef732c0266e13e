import HeraldHTTP2
import NIOCore

/// A stream on a connection, lent to one send.
struct APNsLease: Sendable {
    let slot: Int
    let connection: HTTP2ClientConnection
}

/// Streams on one connection handed to a waiter at once: one lease standing for `streams`
/// streams, each released on its own.
struct APNsGrant: Sendable {
    let lease: APNsLease
    let streams: Int
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

    /// Someone waiting for streams: called, outside the lock, with a grant or with nil when
    /// there is no connection (or the client stopped).
    typealias Waiter = @Sendable (APNsGrant?) -> Void

    /// A waiter in its queue, with the id its send may withdraw it by (``cancelWait(_:)``) and
    /// how many streams it could use.
    struct Waiting {
        let id: UInt64
        let waiter: Waiter
        let wanted: Int
    }

    var slots: [Slot]
    var inFlight = 0
    let maxInFlight: Int
    /// A waiter that is not urgent is woken once this many streams are free for it (or all it
    /// wants, if fewer), not at the first: while APNs answers one stream at a time, as it does
    /// across a real round trip, each wake-up then sends a group in one write instead of one
    /// notification (``refillGroup(maxInFlight:)``).
    let refillGroup: Int
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
        refillGroup = Self.refillGroup(maxInFlight: maxInFlight)
    }

    /// A 256th of the in-flight bound, at least 1 (7 at the default 2,000). A 64th (31) cut
    /// more CPU but cost 5–14 % of the rate at a fixed 50 ms round trip: streams freed short
    /// of a group sit idle until it fills, and each connection fills its own.
    static func refillGroup(maxInFlight: Int) -> Int { max(1, maxInFlight / 256) }

    /// The connection a waiter that is not urgent and could use `wanted` streams is woken for
    /// now, of `count` connections with `room(i)` free streams of the `limit(i)` each may carry
    /// (the most room wins): one whose free streams reach the refill group, or all the waiter
    /// wants, or a 128th of what the connection may carry (7 of APNs' 1,000; one until a request
    /// on it authenticated, or on a server allowing few streams) — or any with room while fewer
    /// than a group are in flight in all, since answers to come could not free a group then.
    /// Nil: none yet.
    static func connectionToWake(
        count: Int, room: (Int) -> Int, limit: (Int) -> Int, inFlight: Int, maxInFlight: Int, wanted: Int,
        refillGroup: Int
    ) -> Int? {
        var best: (index: Int, room: Int)?
        for index in 0..<count {
            let free = min(room(index), maxInFlight - inFlight)
            guard free > 0, free > (best?.room ?? 0) else { continue }
            let group = min(wanted, refillGroup, max(1, limit(index) / 128))
            if free >= group || inFlight < refillGroup { best = (index, free) }
        }
        return best?.index
    }

    /// The connection ``connectionToWake(count:room:limit:inFlight:maxInFlight:wanted:refillGroup:)``
    /// names for a waiter that is not urgent, if any; none while an urgent one waits.
    func connectionToWake(wanted: Int) -> Int? {
        guard !stopped, urgentWaiters.isEmpty else { return nil }
        return Self.connectionToWake(
            count: slots.count, room: { room(slots[$0]) }, limit: { limit(slots[$0]) }, inFlight: inFlight,
            maxInFlight: maxInFlight, wanted: wanted, refillGroup: refillGroup)
    }

    /// Up to `count` streams for a send that is not in line yet: none while others wait ahead
    /// of it (they may be waiting for their refill group to fill), so it joins the line.
    mutating func leaseJoiningLine(upTo count: Int, urgent: Bool) -> (lease: APNsLease, streams: Int)? {
        guard urgent || waiters.isEmpty else { return nil }
        return tryLease(upTo: count, urgent: urgent)
    }

    /// Streams `slot`'s connection may carry at once: the server's limit once a request on it
    /// authenticated, one before; 0 without a connection taking requests.
    func limit(_ slot: Slot) -> Int {
        guard let connection = slot.connection, connection.isAcceptingRequests else { return 0 }
        return slot.authenticated ? connection.maxConcurrentStreams : min(1, connection.maxConcurrentStreams)
    }

    /// Streams `slot` may still take.
    func room(_ slot: Slot) -> Int {
        limit(slot) - slot.inUse
    }

    /// The slot whose connection may take the most streams, and how many; nil when none may take one.
    func roomiestSlot() -> (index: Int, room: Int)? {
        var best: (index: Int, room: Int)?
        for index in slots.indices {
            let room = room(slots[index])
            if room > (best?.room ?? 0) { best = (index, room) }
        }
        return best
    }

    /// A stream on the connection with the most room, if any and if in-flight allows.
    mutating func tryLease(urgent: Bool = false) -> APNsLease? {
        tryLease(upTo: 1, urgent: urgent)?.lease
    }

    /// Up to `count` streams on the connection with the most room, if any and if in-flight
    /// allows: one lease, and how many streams it stands for (each is released on its own).
    /// A send that is not `urgent` gets none while an urgent one waits.
    mutating func tryLease(upTo count: Int, urgent: Bool = false) -> (lease: APNsLease, streams: Int)? {
        guard let (best, _) = roomiestSlot() else { return nil }
        return tryLease(upTo: count, on: best, urgent: urgent)
    }

    /// Up to `count` streams on the connection of `slot`, if it has room and in-flight allows.
    mutating func tryLease(upTo count: Int, on slot: Int, urgent: Bool) -> (lease: APNsLease, streams: Int)? {
        guard count > 0, !stopped, inFlight < maxInFlight, urgent || urgentWaiters.isEmpty,
            let connection = slots[slot].connection
        else { return nil }
        let streams = min(count, room(slots[slot]), maxInFlight - inFlight)
        guard streams > 0 else { return nil }
        slots[slot].inUse += streams
        inFlight += streams
        return (APNsLease(slot: slot, connection: connection), streams)
    }

    /// Gives a stream back; `authenticated` when the answer showed the credential was accepted.
    mutating func release(_ lease: APNsLease, authenticated: Bool) -> [(Waiter, APNsGrant?)] {
        inFlight -= 1
        if slots[lease.slot].connection === lease.connection {
            slots[lease.slot].inUse -= 1
            if authenticated { slots[lease.slot].authenticated = true }
        }
        return wakeWaiters()
    }

    /// Grants for as many waiters as there is room for: urgent ones first and at once, each
    /// queue oldest first, each waiter given up to what it wants; one that is not urgent only
    /// when ``connectionToWake(wanted:)`` names a connection, on that connection.
    mutating func wakeWaiters() -> [(Waiter, APNsGrant?)] {
        var woken: [(Waiter, APNsGrant?)] = []
        while let first = urgentWaiters.first, let leased = tryLease(upTo: first.wanted, urgent: true) {
            urgentWaiters.removeFirst()
            woken.append((first.waiter, APNsGrant(lease: leased.lease, streams: leased.streams)))
        }
        while let first = waiters.first, let slot = connectionToWake(wanted: first.wanted),
            let leased = tryLease(upTo: first.wanted, on: slot, urgent: false)
        {
            waiters.removeFirst()
            woken.append((first.waiter, APNsGrant(lease: leased.lease, streams: leased.streams)))
        }
        return woken
    }

    /// Registers `waiter`, which could use `wanted` streams, in its queue; returns the id that
    /// withdraws it.
    @discardableResult
    mutating func wait(_ waiter: @escaping Waiter, wanted: Int = 1, urgent: Bool) -> UInt64 {
        nextWaiterID += 1
        let waiting = Waiting(id: nextWaiterID, waiter: waiter, wanted: max(1, wanted))
        if urgent { urgentWaiters.append(waiting) } else { waiters.append(waiting) }
        return waiting.id
    }

    /// Withdraws the waiter `id` (its send stopped): it will not be called. Returns whether it
    /// still waited, and the waiters its leaving lets lease (an urgent one held the others back).
    mutating func cancelWait(_ id: UInt64) -> (withdrawn: Bool, woken: [(Waiter, APNsGrant?)]) {
        if let index = urgentWaiters.firstIndex(where: { $0.id == id }) {
            urgentWaiters.remove(at: index)
            return (true, wakeWaiters())
        }
        if let index = waiters.firstIndex(where: { $0.id == id }) {
            waiters.remove(at: index)
            // The one behind it may want fewer streams than are free.
            return (true, wakeWaiters())
        }
        return (false, [])
    }

    /// Every waiter, to be told there is no connection (or the client stopped).
    mutating func failWaiters() -> [(Waiter, APNsGrant?)] {
        var failed: [(Waiter, APNsGrant?)] = []
        while !urgentWaiters.isEmpty { failed.append((urgentWaiters.removeFirst().waiter, nil)) }
        while !waiters.isEmpty { failed.append((waiters.removeFirst().waiter, nil)) }
        return failed
    }

    var hasLiveConnection: Bool { slots.contains { $0.connection?.isAcceptingRequests == true } }
}
