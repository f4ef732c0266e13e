import HeraldMetrics
import Synchronization

/// What herald-sender counts, shown on `/metrics` in Prometheus text format. Updated once per
/// batch (not per notification), under one lock.
public final class SenderMetrics: Sendable {
    /// Upper bounds of the send-latency histogram, in seconds (Prometheus's base unit).
    static let latencyBuckets: [Double] = [
        0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
    ]

    private struct State {
        var outcomes: [String: Int] = [:]  // "accepted", "rejected/Unregistered", …
        var batches = 0
        var attempts = 0
        /// Answers that were tried again, by cause (an APNs status or a transport failure).
        var retries: [String: Int] = [:]
        var latency = Histogram(bounds: SenderMetrics.latencyBuckets)
    }

    private let state = Mutex(State())
    let batchesInFlight = Atomic<Int>(0)
    /// Second copies of batches already accounted, skipped.
    let duplicateBatches = Atomic<Int>(0)
    /// Batches held because their app's credential cannot be opened with the configured master
    /// keys (alert on it: nothing of those apps is delivered until it is fixed).
    public let batchesWaitingForCredential = Atomic<Int>(0)
    /// Campaign batches whose connected targets wait for a turn at the gateways
    /// (`HERALD_SENDER_MAX_ONLINE_BATCHES_IN_FLIGHT` are there already); counted in
    /// `batchesInFlight` as well.
    let batchesWaitingForGateways = Atomic<Int>(0)
    /// Batches whose very record another live sender (or an earlier hand-out) is sending: the
    /// group moved its partition while that sender held it. They wait for its outcome.
    let batchesWaitingForAnotherSender = Atomic<Int>(0)

    public init() {}

    /// Adds one finished batch: its outcomes, the attempts it took and each notification's
    /// latency (milliseconds from first attempt to final answer).
    func record(
        accepted: Int, failures: [(status: String, reason: String)], attempts: Int, latencies: [Double],
        retries: [String: Int] = [:], countsBatch: Bool = true
    ) {
        var latency = Histogram(bounds: Self.latencyBuckets)
        for milliseconds in latencies { latency.observe(milliseconds / 1000) }
        state.withLock { state in
            if countsBatch { state.batches += 1 }
            state.attempts += attempts
            if accepted > 0 { state.outcomes["accepted|", default: 0] += accepted }
            for failure in failures { state.outcomes["\(failure.status)|\(failure.reason)", default: 0] += 1 }
            state.latency.add(latency)
            state.retries.merge(retries, uniquingKeysWith: +)
        }
    }

    /// The Prometheus text exposition, with `extra` lines appended (connection gauges).
    public func prometheusText(extra: String = "") -> String {
        let state = self.state.withLock { $0 }
        var text = PrometheusText()
        text.family(
            "herald_sender_notifications_total", .counter, help: "Notifications by final outcome and APNs reason.")
        for (key, count) in state.outcomes.sorted(by: { $0.key < $1.key }) {
            let parts = key.split(separator: "|", omittingEmptySubsequences: false)
            text.sample(
                "herald_sender_notifications_total",
                ["outcome": String(parts[0]), "reason": parts.count > 1 ? String(parts[1]) : ""], value: count)
        }
        text.single("herald_sender_batches_total", .counter, help: "Job batches finished.", value: state.batches)
        text.family(
            "herald_sender_retries_total", .counter,
            help: "APNs answers tried again, by cause: an HTTP status (429, 500, 503) or a transport failure.")
        for (cause, count) in state.retries.sorted(by: { $0.key < $1.key }) {
            text.sample("herald_sender_retries_total", ["cause": cause], value: count)
        }
        text.single(
            "herald_sender_duplicate_batches_total", .counter,
            help: "Second copies of job batches already accounted or being sent from another record, not sent.",
            value: duplicateBatches.load(ordering: .relaxed))
        text.single(
            "herald_sender_batches_in_flight", .gauge, help: "Job batches being sent.",
            value: batchesInFlight.load(ordering: .relaxed))
        text.single(
            "herald_sender_batches_waiting_for_credential", .gauge,
            help:
                "Job batches held because their app's APNs credential cannot be decrypted with the configured master keys.",
            value: batchesWaitingForCredential.load(ordering: .relaxed))
        text.single(
            "herald_sender_batches_waiting_for_gateways", .gauge,
            help:
                "Campaign batches in flight whose connected targets wait for a turn at the gateways (the online road is the bottleneck when it stays up).",
            value: batchesWaitingForGateways.load(ordering: .relaxed))
        text.single(
            "herald_sender_batches_waiting_for_another_sender", .gauge,
            help:
                "Job batches whose Kafka record a live sender still holds (the group moved its partition meanwhile), waiting for that sender's outcome.",
            value: batchesWaitingForAnotherSender.load(ordering: .relaxed))
        text.single(
            "herald_sender_attempts_total", .counter, help: "APNs requests made (retries included).",
            value: state.attempts)
        state.latency.write(
            to: &text, name: "herald_sender_latency_seconds",
            help: "From a notification's first attempt to its final answer.")
        return text.text + extra
    }

    /// Batches finished so far.
    public var batches: Int { state.withLock { $0.batches } }
}
