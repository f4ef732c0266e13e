/// When a notification APNs could not take is sent again: exponential back-off with full
/// jitter, a cap on attempts, and never past the notification's expiration.
public struct RetryPolicy: Sendable, Hashable {
    /// Attempts in all, the first included.
    public var maxAttempts: Int
    /// The back-off before the second attempt; it doubles for each further attempt.
    public var baseDelayMilliseconds: Int
    /// The largest back-off.
    public var maxDelayMilliseconds: Int

    public init(maxAttempts: Int = 8, baseDelayMilliseconds: Int = 200, maxDelayMilliseconds: Int = 30_000) {
        self.maxAttempts = maxAttempts
        self.baseDelayMilliseconds = baseDelayMilliseconds
        self.maxDelayMilliseconds = maxDelayMilliseconds
    }

    /// The wait before attempt `attempt + 1` after `attempt` attempts failed: uniformly random
    /// between half and all of `base × 2^(attempt−1)`, capped ("equal jitter", so that many
    /// senders retrying together spread out but none retries at once).
    /// - Parameter unit: a random number in 0..<1.
    public func delayMilliseconds(afterAttempt attempt: Int, unit: Double) -> Int {
        let exponent = min(max(attempt - 1, 0), 30)
        let ceiling = min(Double(baseDelayMilliseconds) * Double(1 << exponent), Double(maxDelayMilliseconds))
        return Int(ceiling / 2 + ceiling / 2 * unit)
    }

    /// What to do after `attempt` attempts failed retryably, at `nowMilliseconds`, for a
    /// notification that expires at `expirationMilliseconds` (nil: never).
    public func decision(afterAttempt attempt: Int, nowMilliseconds: Int64, expirationMilliseconds: Int64?, unit: Double) -> Decision {
        if let expirationMilliseconds, nowMilliseconds >= expirationMilliseconds { return .expired }
        guard attempt < maxAttempts else { return .giveUp }
        let delay = delayMilliseconds(afterAttempt: attempt, unit: unit)
        if let expirationMilliseconds, nowMilliseconds + Int64(delay) >= expirationMilliseconds { return .expired }
        return .retry(afterMilliseconds: delay)
    }

    public enum Decision: Sendable, Hashable {
        case retry(afterMilliseconds: Int)
        /// Its expiration passed (or will before the next attempt): it is `expired`.
        case expired
        /// Out of attempts: it is rejected with the last reason.
        case giveUp
    }
}
