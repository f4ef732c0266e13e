import HeraldCore
import HeraldTiming

/// When a notification APNs could not take is sent again: a ``Backoff`` (exponential, equal
/// jitter), a cap on attempts, and never past the notification's expiration.
public struct RetryPolicy: Sendable, Hashable {
    /// Attempts in all, the first included.
    public var maxAttempts: Int
    /// The waits between attempts.
    public var backoff: Backoff

    /// - Parameters: by default the sender's configured defaults
    ///   (``SenderSettings/defaultMaxAttempts``, ``SenderSettings/defaultRetryBackoff``).
    public init(
        maxAttempts: Int = SenderSettings.defaultMaxAttempts, backoff: Backoff = SenderSettings.defaultRetryBackoff
    ) {
        self.maxAttempts = maxAttempts
        self.backoff = backoff
    }

    /// What to do after `attempt` attempts failed retryably, at `nowMilliseconds` (since 1970),
    /// for a notification that expires at `expirationMilliseconds` (nil: never).
    /// - Parameter unit: a random number in 0..<1, for the back-off's jitter.
    public func decision(
        afterAttempt attempt: Int, nowMilliseconds: Int64, expirationMilliseconds: Int64?, unit: Double
    ) -> Decision {
        if let expirationMilliseconds, nowMilliseconds >= expirationMilliseconds { return .expired }
        guard attempt < maxAttempts else { return .giveUp }
        let delay = backoff.delay(afterFailures: attempt, unit: unit)
        if let expirationMilliseconds, nowMilliseconds + delay.wholeMilliseconds >= expirationMilliseconds {
            return .expired
        }
        return .retry(after: delay)
    }

    public enum Decision: Sendable, Hashable {
        case retry(after: Duration)
        /// Its expiration passed (or will before the next attempt): it is `expired`.
        case expired
        /// Out of attempts: it is rejected with the last reason.
        case giveUp
    }
}
