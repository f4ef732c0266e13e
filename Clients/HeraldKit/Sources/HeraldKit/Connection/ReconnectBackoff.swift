/// How long a client waits before connecting again (docs/gateway.md, "Reconnecting"): a random
/// time between zero and min(60 s, 1 s × 2^attempt), so the clients of a gateway that died do not
/// all come back in the same second; at least what a goaway or an error asked for.
///
/// Pure: the random source is passed in, so tests pin the draws.
public struct ReconnectBackoff: Sendable, Equatable {
    /// The first bound, doubled on each attempt.
    public var baseMilliseconds: UInt64 = 1_000
    /// The largest bound.
    public var capMilliseconds: UInt64 = 60_000
    /// Attempts since the last welcome.
    public private(set) var attempt: UInt32 = 0

    public init(baseMilliseconds: UInt64 = 1_000, capMilliseconds: UInt64 = 60_000) {
        self.baseMilliseconds = baseMilliseconds
        self.capMilliseconds = capMilliseconds
    }

    /// The bound of the next wait: min(cap, base × 2^attempt).
    public var boundMilliseconds: UInt64 {
        let shift = min(attempt, 32)
        let (grown, overflow) = baseMilliseconds.multipliedReportingOverflow(by: 1 << UInt64(shift))
        return overflow ? capMilliseconds : min(capMilliseconds, grown)
    }

    /// The next wait (and one more attempt counted): uniform in 0...bound, and at least
    /// `atLeastMilliseconds` (a goaway's draw or an error's `retry_after_milliseconds`).
    public mutating func nextWait(atLeastMilliseconds: UInt64 = 0, using random: inout some RandomNumberGenerator)
        -> UInt64
    {
        let wait = UInt64.random(in: 0...boundMilliseconds, using: &random)
        attempt &+= 1
        return max(wait, atLeastMilliseconds)
    }

    /// The connection was welcomed: the next loss starts from the first bound again.
    public mutating func reset() {
        attempt = 0
    }
}
