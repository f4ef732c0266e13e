/// How long to wait before trying again after failures: exponential, capped, with "equal
/// jitter" — each wait is drawn uniformly between half and all of `initial × 2^(failures−1)`
/// (at most `maximum`), so that many processes retrying together spread out, yet none tries
/// again at once.
///
/// The one back-off of Herald: the sender's retries of notifications (``RetryPolicy`` in
/// HeraldSender), APNs and Kafka reconnects and queues, and every loop that waits for the
/// database or the broker to come back.
public struct Backoff: Sendable, Hashable {
    /// The ceiling of the first wait; it doubles with each further failure.
    public var initial: Duration
    /// The largest ceiling.
    public var maximum: Duration

    public init(initial: Duration, maximum: Duration) {
        self.initial = initial
        self.maximum = max(initial, maximum)
    }

    /// The ceiling of the wait after `failures` consecutive failures (1 for the first):
    /// `initial × 2^(failures−1)`, at most `maximum`.
    public func ceiling(afterFailures failures: Int) -> Duration {
        let exponent = min(max(failures - 1, 0), 40)
        let scaled = initial * (1 << min(exponent, 30))
        return exponent > 30 || scaled > maximum ? maximum : scaled
    }

    /// The wait after `failures` consecutive failures: between half and all of its ceiling.
    /// - Parameter unit: a random number in 0..<1 (0 gives half the ceiling).
    public func delay(afterFailures failures: Int, unit: Double) -> Duration {
        let ceiling = ceiling(afterFailures: failures)
        return ceiling / 2 + (ceiling / 2) * min(max(unit, 0), 1)
    }

    /// The waits of one run of failures, one after another; start a new run after a success.
    public func delays() -> Delays { Delays(backoff: self) }

    /// The waits of one run of failures (see ``delays()``).
    public struct Delays: Sendable {
        let backoff: Backoff
        /// Failures so far in this run.
        public private(set) var failures = 0

        /// The wait after one more failure.
        public mutating func next() -> Duration {
            failures += 1
            return backoff.delay(afterFailures: failures, unit: Double.random(in: 0..<1))
        }

        /// Starts over (after a success).
        public mutating func reset() { failures = 0 }
    }
}

extension Backoff {
    /// For loops that wait for PostgreSQL or the broker to come back: 200 ms doubling to 5 s.
    public static let outage = Backoff(initial: .milliseconds(200), maximum: .seconds(5))
}
