/// A ``KafkaProducer``'s life, as a state machine: its methods say what to do, and the producer
/// does it outside the lock (resuming waiters, stopping the delivery-report thread).
///
/// - `open`: records are accepted; the delivery-report thread polls.
/// - `flushing`: shutdown was asked; no record is accepted, the thread flushes what librdkafka
///   still holds (up to the flush timeout) and releases it. Callers of `shutdown` wait.
/// - `closed`: librdkafka is released; `shutdown` returns at once.
struct KafkaProducerLifecycle<Waiter> {
    enum State {
        case open
        case flushing(waiters: [Waiter])
        case closed
    }

    private(set) var state = State.open

    /// Whether ``KafkaProducer/send(_:)`` takes new records (and the thread keeps polling).
    var acceptsRecords: Bool {
        if case .open = state { true } else { false }
    }

    /// Shutdown was asked without waiting for it (the producer was released).
    mutating func stopRequested() {
        if case .open = state { state = .flushing(waiters: []) }
    }

    enum ShutdownAction {
        /// The producer is still flushing: `waiter` is resumed when it is closed.
        case wait
        /// Already closed: resume `waiter` now.
        case resume
    }

    /// Asks for shutdown and for `waiter` to be told when it is done.
    mutating func shutdown(notifying waiter: Waiter) -> ShutdownAction {
        switch state {
        case .open:
            state = .flushing(waiters: [waiter])
            return .wait
        case .flushing(var waiters):
            waiters.append(waiter)
            state = .flushing(waiters: waiters)
            return .wait
        case .closed:
            return .resume
        }
    }

    /// The delivery-report thread flushed and released librdkafka.
    /// - Returns: the waiters to resume.
    mutating func threadFinished() -> [Waiter] {
        defer { state = .closed }
        if case .flushing(let waiters) = state { return waiters }
        return []
    }
}
