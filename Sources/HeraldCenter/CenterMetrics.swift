import HeraldMetrics
import Synchronization

/// herald-center's counters for `/metrics` (Prometheus text).
public final class CenterMetrics: Sendable {
    let devicesEmitted = Atomic<Int>(0)
    let batchesProduced = Atomic<Int>(0)
    let batchesRedriven = Atomic<Int>(0)
    let batchesUndeliverable = Atomic<Int>(0)
    let fanoutsStarted = Atomic<Int>(0)
    let fanoutsFinished = Atomic<Int>(0)
    let fanoutsRunning = Atomic<Int>(0)
    let outcomeBatchesCounted = Atomic<Int>(0)
    let outcomeBatchesIgnored = Atomic<Int>(0)
    let notificationsCounted = Atomic<Int>(0)
    let tokensInvalidated = Atomic<Int>(0)
    let tokensPurged = Atomic<Int>(0)
    let pushesCompleted = Atomic<Int>(0)
    let outboxPublished = Atomic<Int>(0)
    /// Pushes per state, refreshed by the sweeper.
    let pushesByState = Mutex<[String: Int64]>([:])

    public init() {}

    /// Devices put into job batches so far (for benchmarks and tests).
    public var devicesEmittedCount: Int { devicesEmitted.load(ordering: .relaxed) }
    /// Notifications whose outcome was counted so far.
    public var notificationsCountedCount: Int { notificationsCounted.load(ordering: .relaxed) }

    public func prometheusText(extra: String = "") -> String {
        var text = PrometheusText()
        func counter(_ name: String, _ help: String, _ value: borrowing Atomic<Int>) {
            text.single(name, .counter, help: help, value: value.load(ordering: .relaxed))
        }
        counter("herald_center_devices_emitted_total", "Devices put into job batches (fan-out).", devicesEmitted)
        counter("herald_center_batches_produced_total", "Job batches acknowledged by the broker.", batchesProduced)
        counter(
            "herald_center_batches_redriven_total", "Job batches produced again after no outcome came back.",
            batchesRedriven)
        counter(
            "herald_center_batches_undeliverable_total",
            "Job batches ended Undeliverable: no outcome after HERALD_CENTER_MAX_REDRIVES re-drives.",
            batchesUndeliverable)
        counter("herald_center_fanouts_started_total", "Fan-outs this center claimed.", fanoutsStarted)
        counter(
            "herald_center_fanouts_finished_total", "Fan-outs this center took to the end of the audience.",
            fanoutsFinished)
        counter("herald_center_outcome_batches_total", "Outcome batches counted.", outcomeBatchesCounted)
        counter(
            "herald_center_outcome_batches_ignored_total",
            "Outcome batches seen before (or of unknown batches), not counted again.", outcomeBatchesIgnored)
        counter("herald_center_outcomes_total", "Notifications whose final outcome was counted.", notificationsCounted)
        counter(
            "herald_center_tokens_invalidated_total", "Device tokens invalidated after APNs rejected them.",
            tokensInvalidated)
        counter("herald_center_tokens_purged_total", "Invalid device tokens deleted after the purge age.", tokensPurged)
        counter("herald_center_pushes_completed_total", "Pushes this center saw complete.", pushesCompleted)
        counter("herald_center_outbox_published_total", "Outbox records published to Kafka.", outboxPublished)
        text.single(
            "herald_center_fanouts_running", .gauge, help: "Fan-outs running in this center.",
            value: fanoutsRunning.load(ordering: .relaxed))
        text.family("herald_center_pushes", .gauge, help: "Pushes by state (all centers), as of the last sweep.")
        for (state, count) in pushesByState.withLock({ $0 }).sorted(by: { $0.key < $1.key }) {
            text.sample("herald_center_pushes", ["state": state], value: count)
        }
        return text.text + extra
    }
}
