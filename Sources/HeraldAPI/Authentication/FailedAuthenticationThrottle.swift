import Synchronization

/// Counts failed authentications (unknown keys, wrong admin tokens) per source address in
/// one-minute windows. A source past `limit` in its window has its further failures answered
/// 429 until the window ends. Successes are never throttled: the caller looks a token up first
/// and asks here only when it failed, so a guesser sharing an address with real clients (a load
/// balancer, a carrier NAT) cannot lock their keys out.
///
/// Addresses are remembered up to `remembered` (least recently failing forgotten first). Behind
/// a proxy every caller shares the proxy's address unless the proxy is trusted
/// (``TrustedProxies``); see docs/limits.md.
final class FailedAuthenticationThrottle: Sendable {
    private struct Window {
        var start: ContinuousClock.Instant
        var failures: Int
    }

    static let window: Duration = .seconds(60)
    /// Failures a source may have in a window; 0 turns the throttle off.
    let limit: Int
    private let windows: Mutex<LeastRecentlyUsed<String, Window>>
    /// `herald_api_authentication_failures_total` and `…_throttled_total`, counted here for the
    /// API and the console alike.
    private let metrics: APIMetrics

    init(limit: Int, metrics: APIMetrics, remembered: Int = 100_000) {
        self.limit = limit
        self.metrics = metrics
        windows = Mutex(LeastRecentlyUsed(capacity: remembered))
    }

    /// Notes a failed authentication from `source`.
    /// - Returns: the whole seconds (at least 1) `source` must wait when this failure is past
    ///   the limit (answer 429 with them as `Retry-After`), or nil while it is within it (401).
    func recordFailure(source: String, now: ContinuousClock.Instant = .now) -> Int? {
        metrics.authenticationFailures.add(1, ordering: .relaxed)
        guard limit > 0 else { return nil }
        let wait: Duration? = windows.withLock { windows in
            var window = windows.value(for: source) ?? Window(start: now, failures: 0)
            if now - window.start >= Self.window { window = Window(start: now, failures: 0) }
            window.failures += 1
            windows.set(window, for: source)
            return window.failures > limit ? window.start + Self.window - now : nil
        }
        guard let wait else { return nil }
        metrics.authenticationThrottled.add(1, ordering: .relaxed)
        return max(1, Int(wait.fractionalSeconds.rounded(.up)))
    }
}
