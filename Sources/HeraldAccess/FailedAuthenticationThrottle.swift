import Synchronization

/// Counts failed authentications (unknown keys, wrong admin tokens, a gateway's unknown devices) per source address in
/// one-minute windows. A source past `limit` in its window has its further failures answered
/// 429 until the window ends. Successes are never throttled: the caller looks a token up first
/// and asks here only when it failed, so a guesser sharing an address with real clients (a load
/// balancer, a carrier NAT) cannot lock their keys out.
///
/// Addresses are remembered up to `remembered` (least recently failing forgotten first). Behind
/// a proxy every caller shares the proxy's address unless the proxy is trusted
/// (``TrustedProxies``); see docs/limits.md.
public final class FailedAuthenticationThrottle: Sendable {
    private struct Window {
        var start: ContinuousClock.Instant
        var failures: Int
    }

    public static let window: Duration = .seconds(60)
    /// Failures a source may have in a window; 0 turns the throttle off.
    public let limit: Int
    private let windows: Mutex<LeastRecentlyUsed<String, Window>>
    /// Failures and throttled failures, counted here for the API, the console and the gateway.
    private let counters: AccessCounters

    public init(limit: Int, counters: AccessCounters, remembered: Int = 100_000) {
        self.limit = limit
        self.counters = counters
        windows = Mutex(LeastRecentlyUsed(capacity: remembered))
    }

    /// Notes a failed authentication from `source`.
    /// - Returns: the whole seconds (at least 1) `source` must wait when this failure is past
    ///   the limit (answer 429 with them as `Retry-After`), or nil while it is within it (401).
    public func recordFailure(source: String, now: ContinuousClock.Instant = .now) -> Int? {
        counters.authenticationFailures.add(1, ordering: .relaxed)
        guard limit > 0 else { return nil }
        let wait: Duration? = windows.withLock { windows in
            var window = windows.value(for: source) ?? Window(start: now, failures: 0)
            if now - window.start >= Self.window { window = Window(start: now, failures: 0) }
            window.failures += 1
            windows.set(window, for: source)
            return window.failures > limit ? window.start + Self.window - now : nil
        }
        guard let wait else { return nil }
        counters.authenticationThrottled.add(1, ordering: .relaxed)
        return max(1, Int(wait.fractionalSeconds.rounded(.up)))
    }
}
