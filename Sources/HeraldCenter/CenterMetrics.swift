import Synchronization

/// herald-center's counters for `/metrics` (Prometheus text).
public final class CenterMetrics: Sendable {
    let devicesEmitted = Atomic<Int>(0)
    let batchesProduced = Atomic<Int>(0)
    let batchesRedriven = Atomic<Int>(0)
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
        var text = ""
        func counter(_ name: String, _ help: String, _ value: Int) {
            text += "# HELP \(name) \(help)\n# TYPE \(name) counter\n\(name) \(value)\n"
        }
        counter("herald_center_devices_emitted_total", "Devices put into job batches (fan-out).", devicesEmitted.load(ordering: .relaxed))
        counter("herald_center_batches_produced_total", "Job batches acknowledged by the broker.", batchesProduced.load(ordering: .relaxed))
        counter("herald_center_batches_redriven_total", "Job batches produced again after no outcome came back.", batchesRedriven.load(ordering: .relaxed))
        counter("herald_center_fanouts_started_total", "Fan-outs this center claimed.", fanoutsStarted.load(ordering: .relaxed))
        counter("herald_center_fanouts_finished_total", "Fan-outs this center took to the end of the audience.", fanoutsFinished.load(ordering: .relaxed))
        counter("herald_center_outcome_batches_total", "Outcome batches counted.", outcomeBatchesCounted.load(ordering: .relaxed))
        counter("herald_center_outcome_batches_ignored_total", "Outcome batches seen before (or of unknown batches), not counted again.", outcomeBatchesIgnored.load(ordering: .relaxed))
        counter("herald_center_outcomes_total", "Notifications whose final outcome was counted.", notificationsCounted.load(ordering: .relaxed))
        counter("herald_center_tokens_invalidated_total", "Device tokens invalidated after APNs rejected them.", tokensInvalidated.load(ordering: .relaxed))
        counter("herald_center_tokens_purged_total", "Invalid device tokens deleted after the purge age.", tokensPurged.load(ordering: .relaxed))
        counter("herald_center_pushes_completed_total", "Pushes this center saw complete.", pushesCompleted.load(ordering: .relaxed))
        counter("herald_center_outbox_published_total", "Outbox records published to Kafka.", outboxPublished.load(ordering: .relaxed))
        text += "# HELP herald_center_fanouts_running Fan-outs running in this center.\n# TYPE herald_center_fanouts_running gauge\n"
        text += "herald_center_fanouts_running \(fanoutsRunning.load(ordering: .relaxed))\n"
        text += "# HELP herald_center_pushes Pushes by state (all centers), as of the last sweep.\n# TYPE herald_center_pushes gauge\n"
        for (state, count) in pushesByState.withLock({ $0 }).sorted(by: { $0.key < $1.key }) {
            text += "herald_center_pushes{state=\"\(state)\"} \(count)\n"
        }
        return text + extra
    }
}
