/// A ``KafkaConsumer``'s life, as a state machine: its methods say what to do, and the consumer
/// does it outside the lock (on its blocking-call thread).
///
/// - `open`: ``KafkaConsumer/messages`` hands out records.
/// - `closing`: close was asked; pulls return nothing, the first caller commits, leaves the
///   group and releases librdkafka.
/// - `closed`: all of that is done.
struct KafkaConsumerLifecycle {
    enum State {
        case open, closing, closed
    }

    private(set) var state = State.open

    /// Whether pulls may still hand out records.
    var isOpen: Bool { state == .open }

    enum CloseAction {
        /// This caller closes the consumer (commit, leave the group, release librdkafka), then
        /// calls ``closeFinished()``.
        case close
        /// Another caller is closing it or has: nothing to do.
        case none
    }

    mutating func close() -> CloseAction {
        guard state == .open else { return .none }
        state = .closing
        return .close
    }

    mutating func closeFinished() {
        state = .closed
    }
}
