import Synchronization

/// Counts failed authentications (unknown keys, wrong admin tokens) per source address in
/// one-minute windows. A source past `limit` in its window is refused until the window ends:
/// guessing keys then costs nothing but the refusal.
///
/// Addresses are remembered up to `remembered` (least recently failing forgotten first). Behind
/// a proxy every caller shares the proxy's address; see docs/limits.md.
final class FailedAuthenticationThrottle: Sendable {
    private struct Window {
        var start: ContinuousClock.Instant
        var failures: Int
    }

    static let window: Duration = .seconds(60)
    /// Failures a source may have in a window; 0 turns the throttle off.
    let limit: Int
    private let windows: Mutex<LeastRecentlyUsed<String, Window>>

    init(limit: Int, remembered: Int = 100_000) {
        self.limit = limit
        windows = Mutex(LeastRecentlyUsed(capacity: remembered))
    }

    /// How long `source` must wait, if it is past the limit now.
    func retryAfter(source: String, now: ContinuousClock.Instant = .now) -> Duration? {
        guard limit > 0 else { return nil }
        return windows.withLock { windows in
            guard let window = windows.value(for: source), window.failures >= limit else { return nil }
            let ends = window.start + Self.window
            return ends > now ? ends - now : nil
        }
    }

    /// Notes a failed authentication from `source`.
    func recordFailure(source: String, now: ContinuousClock.Instant = .now) {
        guard limit > 0 else { return }
        windows.withLock { windows in
            var window = windows.value(for: source) ?? Window(start: now, failures: 0)
            if now - window.start >= Self.window { window = Window(start: now, failures: 0) }
            window.failures += 1
            windows.set(window, for: source)
        }
    }
}
