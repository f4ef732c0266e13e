import Foundation

/// The engagement events a device has not delivered yet, kept on disk by the client so that an
/// open while offline (or in an app killed before it could send) is reported later, once.
///
/// Pure: the client sends ``nextBatch`` and tells the queue how the server answered; the queue
/// says what to keep and when to try again. The server counts a (push, type, action) of a device
/// once however often it arrives, so a batch sent again after a lost answer counts nothing twice.
public struct EngagementQueue: Sendable, Codable, Equatable {
    /// The most events kept; past it the oldest are dropped (a device offline for weeks).
    public var capacity: Int
    /// The most events a batch carries (the API takes 500).
    public var batchSize: Int
    public private(set) var events: [EngagementEvent] = []
    /// Events dropped because the queue was full or the server refused them.
    public private(set) var dropped = 0
    /// Failed sends in a row: the next wait grows with it.
    public private(set) var failures: UInt32 = 0

    /// How long events wait before the server refuses them (docs/engagement.md: 7 days).
    public static let maximumAge: TimeInterval = 7 * 24 * 3600

    public init(capacity: Int = 5_000, batchSize: Int = 100) {
        self.capacity = capacity
        self.batchSize = min(max(batchSize, 1), 500)
    }

    /// Adds an event (dropping the oldest past ``capacity``).
    public mutating func append(_ event: EngagementEvent) {
        events.append(event)
        if events.count > capacity {
            dropped += events.count - capacity
            events.removeFirst(events.count - capacity)
        }
    }

    /// The events to send next (oldest first), leaving out those past the server's age limit.
    public mutating func nextBatch(now: Date) -> [EngagementEvent] {
        let fresh = events.filter { now.timeIntervalSince($0.occurredAt) < Self.maximumAge }
        dropped += events.count - fresh.count
        events = fresh
        return Array(events.prefix(batchSize))
    }

    /// What to do after an answer.
    public enum Decision: Sendable, Equatable {
        /// Send the next batch now (or stop when the queue is empty).
        case sendNext
        /// Try again after this many seconds.
        case retry(afterSeconds: Int)
    }

    /// The server stored a batch of `count` events (the first `count` of the queue).
    public mutating func stored(count: Int) -> Decision {
        events.removeFirst(min(count, events.count))
        failures = 0
        return .sendNext
    }

    /// Sending the first `count` events failed with `error`. A refusal naming one event
    /// (`events[3]`: a push of another app, one not sent to this device, too old) drops that
    /// event and sends the rest again; any other refusal of the request itself (4xx) drops the
    /// batch, since sending it again cannot succeed; no answer, 429 and 5xx keep everything and
    /// wait: 2^failures seconds up to 10 minutes, at least the server's Retry-After.
    public mutating func failed(count: Int, with error: HeraldAPIError) -> Decision {
        if !error.isRetryable {
            if let field = error.field, let index = Self.eventIndex(field), index < min(count, events.count) {
                events.remove(at: index)
                dropped += 1
            } else {
                let removed = min(count, events.count)
                events.removeFirst(removed)
                dropped += removed
            }
            return .sendNext
        }
        failures &+= 1
        let grown = 1 << min(Int(failures), 10)
        return .retry(afterSeconds: max(min(grown, 600), error.retryAfterSeconds ?? 0))
    }

    /// `events[3]` → 3.
    static func eventIndex(_ field: String) -> Int? {
        guard field.hasPrefix("events["), field.hasSuffix("]") else { return nil }
        return Int(field.dropFirst("events[".count).dropLast())
    }
}
