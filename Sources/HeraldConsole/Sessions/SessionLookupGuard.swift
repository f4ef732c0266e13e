import Synchronization

/// Bounds the database look-ups that session cookies cause (docs/security.md): a cookie that
/// named no live session is not looked up again for a minute, and past `failuresPerMinute` such
/// cookies from one source in a minute, that source's cookies are looked up only if they named a
/// live session lately — the others are shown the sign-in page, as a visitor without a session
/// is. Failures are throttled, never sessions: someone guessing cookies from an address others
/// share (a NAT, a proxy) does not sign them out.
final class SessionLookupGuard: Sendable {
    static let window: Duration = .seconds(60)

    private struct Window {
        var start: ContinuousClock.Instant
        var failures: Int
    }

    private struct State {
        /// Cookies (their SHA-256, in base64) that named no live session, and when.
        var unknown: [String: ContinuousClock.Instant] = [:]
        var sources: [String: Window] = [:]
        /// Cookies that named a live session, and when they last did.
        var live: [String: ContinuousClock.Instant] = [:]
    }

    /// How long a cookie that named a live session is looked up whatever its source does.
    static let liveFor: Duration = .seconds(86_400)

    let failuresPerMinute: Int
    /// Cookies and sources remembered at most; past it the oldest half is forgotten.
    let remembered: Int
    private let state = Mutex(State())

    init(failuresPerMinute: Int = 30, remembered: Int = 10_000) {
        self.failuresPerMinute = max(1, failuresPerMinute)
        self.remembered = max(2, remembered)
    }

    /// Whether the session `cookie` from `source` is worth a look-up.
    func mayLookUp(_ cookie: String, from source: String, now: ContinuousClock.Instant = .now) -> Bool {
        state.withLock { state in
            if let at = state.live[cookie], now - at < Self.liveFor { return true }
            if let at = state.unknown[cookie], now - at < Self.window { return false }
            if let window = state.sources[source], now - window.start < Self.window,
                window.failures >= failuresPerMinute
            {
                return false
            }
            return true
        }
    }

    /// The look-up of `cookie` found a live session.
    func succeeded(_ cookie: String, now: ContinuousClock.Instant = .now) {
        state.withLock { state in
            if state.live.count >= remembered, state.live[cookie] == nil {
                Self.forgetOldest(&state.live, keepingWithin: Self.liveFor, now: now)
            }
            state.live[cookie] = now
        }
    }

    /// The look-up of `cookie` from `source` found no live session.
    func failed(_ cookie: String, from source: String, now: ContinuousClock.Instant = .now) {
        state.withLock { state in
            state.live[cookie] = nil
            if state.unknown.count >= remembered {
                Self.forgetOldest(&state.unknown, keepingWithin: Self.window, now: now)
            }
            state.unknown[cookie] = now
            var window = state.sources[source] ?? Window(start: now, failures: 0)
            if now - window.start >= Self.window { window = Window(start: now, failures: 0) }
            window.failures += 1
            if state.sources.count >= remembered, state.sources[source] == nil {
                state.sources = state.sources.filter { now - $0.value.start < Self.window }
                if state.sources.count >= remembered { state.sources.removeAll() }
            }
            state.sources[source] = window
        }
    }

    /// Drops what is older than `keepingWithin`, then the older half of what is left.
    private static func forgetOldest(
        _ cookies: inout [String: ContinuousClock.Instant], keepingWithin: Duration, now: ContinuousClock.Instant
    ) {
        cookies = cookies.filter { now - $0.value < keepingWithin }
        guard cookies.count > 1 else { return }
        let oldestFirst = cookies.sorted { $0.value < $1.value }
        for (cookie, _) in oldestFirst.prefix(cookies.count / 2) { cookies[cookie] = nil }
    }
}
