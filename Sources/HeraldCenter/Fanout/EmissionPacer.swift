/// Paces a throttled fan-out: batch after batch, so that `emitted` targets leave no sooner than
/// `emitted / rate` seconds after the start. Pure arithmetic; the fan-out sleeps the delays it
/// returns.
struct EmissionPacer {
    /// Targets per second.
    var rate: Double
    /// When pacing (re)started, and the targets emitted before that moment.
    private var start: ContinuousClock.Instant
    private var emittedAtStart: Int64
    private(set) var emitted: Int64

    init(rate: Double, start: ContinuousClock.Instant, alreadyEmitted: Int64 = 0) {
        self.rate = max(rate, 0.001)
        self.start = start
        self.emittedAtStart = alreadyEmitted
        self.emitted = alreadyEmitted
    }

    /// How long to wait at `now` before emitting the next batch.
    func delay(now: ContinuousClock.Instant) -> Duration {
        let due = start + .seconds(Double(emitted - emittedAtStart) / rate)
        return due > now ? due - now : .zero
    }

    /// Counts a batch of `targets` as emitted.
    mutating func emit(_ targets: Int) {
        emitted += Int64(targets)
    }

    /// Starts over from `now` (after a pause, so the pause is not made up for with a burst).
    mutating func restart(now: ContinuousClock.Instant, rate: Double? = nil) {
        if let rate { self.rate = max(rate, 0.001) }
        start = now
        emittedAtStart = emitted
    }

    /// Seconds until `remaining` more targets are emitted at this rate.
    func secondsToEmit(_ remaining: Int64) -> Double { Double(remaining) / rate }
}
