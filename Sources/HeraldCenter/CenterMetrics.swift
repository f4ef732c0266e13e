import Foundation
import HeraldDomain
import HeraldMetrics
import HeraldStore
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
    /// Times a fan-out held for its outcomes (``CenterSettings/fanoutWindow``).
    let fanoutHolds = Atomic<Int>(0)
    /// Nanoseconds fan-outs spent in each step, by ``FanoutStep/rawValue``.
    let fanoutStepNanoseconds = Mutex([Int](repeating: 0, count: FanoutStep.allCases.count))
    let outcomeBatchesCounted = Atomic<Int>(0)
    let outcomeBatchesIgnored = Atomic<Int>(0)
    let notificationsCounted = Atomic<Int>(0)
    let tokensInvalidated = Atomic<Int>(0)
    let tokensPurged = Atomic<Int>(0)
    let pushesCompleted = Atomic<Int>(0)
    let outboxPublished = Atomic<Int>(0)
    /// 1 while the outbox relay listens for added records (`LISTEN herald_outbox`), 0 while it
    /// publishes only every interval.
    let outboxListening = Atomic<Int>(0)
    let outboxDeleted = Atomic<Int>(0)
    let pushesPurged = Atomic<Int>(0)
    let auditEventsDeleted = Atomic<Int>(0)
    let deviceCountChangesFolded = Atomic<Int>(0)
    /// Schedule occurrences this center fired: a push created, or skipped (found due too late).
    let scheduleOccurrencesPushed = Atomic<Int>(0)
    let scheduleOccurrencesSkipped = Atomic<Int>(0)
    /// Webhook attempts by what came of them.
    let webhookDelivered = Atomic<Int>(0)
    let webhookRetried = Atomic<Int>(0)
    let webhookDead = Atomic<Int>(0)
    let webhookInFlight = Atomic<Int>(0)
    /// The whole system's gauges, refreshed by the sweeper while this center holds the reporter
    /// lease; nil while another center reports them (or the database did not answer).
    let systemGauges = Mutex<SystemGauges?>(nil)

    public init() {}

    /// Adds the time since `start` to `step`'s.
    func addFanoutTime(_ step: FanoutStep, since start: ContinuousClock.Instant) {
        let elapsed = (ContinuousClock.now - start).components
        let nanoseconds = Int(elapsed.seconds) * 1_000_000_000 + Int(elapsed.attoseconds / 1_000_000_000)
        fanoutStepNanoseconds.withLock { $0[step.rawValue] += nanoseconds }
    }

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
        counter(
            "herald_center_fanout_holds_total",
            "Times a fan-out held before its next page: HERALD_CENTER_FANOUT_WINDOW notifications without an outcome yet.",
            fanoutHolds)
        text.family(
            "herald_center_fanout_step_seconds_total", .counter,
            help:
                "Seconds fan-outs spent in each step: read, cut, record and slot follow one another in each fan-out's page loop; encode, broker and mark run in up to four pages' producing tasks at once."
        )
        let stepNanoseconds = fanoutStepNanoseconds.withLock { $0 }
        for step in FanoutStep.allCases {
            text.sample(
                "herald_center_fanout_step_seconds_total", ["step": step.name],
                value: Double(stepNanoseconds[step.rawValue]) / 1e9)
        }
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
        counter(
            "herald_center_outbox_deleted_total",
            "Outbox records deleted after HERALD_CENTER_OUTBOX_RETENTION_MS since their publication.", outboxDeleted)
        counter(
            "herald_center_pushes_purged_total",
            "Finished pushes deleted after HERALD_CENTER_PUSH_RETENTION_DAYS, their numbers kept per day.", pushesPurged
        )
        counter(
            "herald_center_audit_events_deleted_total",
            "Audit log entries deleted after HERALD_CENTER_AUDIT_RETENTION_DAYS.", auditEventsDeleted)
        counter(
            "herald_center_device_count_changes_folded_total",
            "Changes of the device counts (registrations, imports, invalidations, deletions) folded into the counts.",
            deviceCountChangesFolded)
        text.family(
            "herald_center_schedule_occurrences_total", .counter,
            help:
                "Schedule occurrences this center fired, by result: pushed (its push created), skipped (found due past the schedule's late window)."
        )
        text.sample(
            "herald_center_schedule_occurrences_total", ["result": "pushed"],
            value: scheduleOccurrencesPushed.load(ordering: .relaxed))
        text.sample(
            "herald_center_schedule_occurrences_total", ["result": "skipped"],
            value: scheduleOccurrencesSkipped.load(ordering: .relaxed))
        text.family(
            "herald_center_webhook_attempts_total", .counter,
            help:
                "Webhook requests this center sent, by result: delivered (2xx), retry (tried again later), dead (retry window over)."
        )
        text.sample(
            "herald_center_webhook_attempts_total", ["result": "delivered"],
            value: webhookDelivered.load(ordering: .relaxed))
        text.sample(
            "herald_center_webhook_attempts_total", ["result": "retry"], value: webhookRetried.load(ordering: .relaxed))
        text.sample(
            "herald_center_webhook_attempts_total", ["result": "dead"], value: webhookDead.load(ordering: .relaxed))
        text.single(
            "herald_center_webhook_requests_in_flight", .gauge, help: "Webhook requests this center is waiting on.",
            value: webhookInFlight.load(ordering: .relaxed))
        text.single(
            "herald_center_fanouts_running", .gauge, help: "Fan-outs running in this center.",
            value: fanoutsRunning.load(ordering: .relaxed))
        text.single(
            "herald_center_outbox_listening", .gauge,
            help:
                "1 while the outbox relay is woken by each commit that adds records (LISTEN herald_outbox); 0: it publishes only every HERALD_CENTER_OUTBOX_INTERVAL_MS.",
            value: outboxListening.load(ordering: .relaxed))
        let system = systemGauges.withLock { $0 }
        text.single(
            "herald_center_system_reporter", .gauge,
            help:
                "Whether this center is the one reporting the whole system's gauges (herald_pushes, herald_outbox_*).",
            value: system == nil ? 0 : 1)
        if let system {
            text.family(
                "herald_pushes", .gauge, help: "Unfinished pushes by state, whole system (reported by one center).")
            for (state, count) in system.pushesByState.sorted(by: { $0.key < $1.key }) {
                text.sample("herald_pushes", ["state": state], value: count)
            }
            text.single(
                "herald_pushes_oldest_unfinished_age_seconds", .gauge,
                help: "Age of the oldest push accepted but not completed, whole system; 0 without one.",
                value: system.oldestUnfinishedPushAge)
            text.single(
                "herald_outbox_backlog_records", .gauge, help: "Outbox records not yet published to Kafka.",
                value: system.outboxBacklog)
            text.single(
                "herald_outbox_oldest_record_age_seconds", .gauge,
                help: "Age of the oldest unpublished outbox record; 0 without one.", value: system.oldestOutboxRecordAge
            )
            text.family(
                "herald_postgres_connections", .gauge,
                help: "Connections of Herald's processes to PostgreSQL, by process and state (pg_stat_activity).")
            let connections = system.connections.sorted {
                ($0.key.application, $0.key.state) < ($1.key.application, $1.key.state)
            }
            for (key, count) in connections {
                text.sample(
                    "herald_postgres_connections", ["application": key.application, "state": key.state], value: count)
            }
            text.single(
                "herald_postgres_server_connections", .gauge,
                help:
                    "Client connections to the whole PostgreSQL server, every database and program (pg_stat_activity).",
                value: system.serverConnections)
            text.single(
                "herald_postgres_max_connections", .gauge, help: "The PostgreSQL server's max_connections.",
                value: system.maximumConnections)
            text.single(
                "herald_apps_legacy_mode", .gauge,
                help:
                    "Apps whose client keys still follow the rules from before the trust migration (legacy client access on, or identity verification off).",
                value: system.appsInLegacyMode)
            text.family(
                "herald_apns_certificate_expiry_timestamp_seconds", .gauge,
                help: "When each app's stored APNs certificate expires (certificate credentials only), Unix time.")
            for certificate in system.certificateExpiries {
                text.sample(
                    "herald_apns_certificate_expiry_timestamp_seconds",
                    ["app": certificate.appID.uuidString.lowercased(), "environment": certificate.environment],
                    value: certificate.expiresAt)
            }
        }
        return text.text + extra
    }
}

/// The steps of a fan-out whose time `/metrics` counts (`herald_center_fanout_step_seconds_total`):
/// where a slow fan-out's time goes.
enum FanoutStep: Int, CaseIterable, Sendable {
    /// Waiting for the next page of the audience (the COPY stream, or a keyset page).
    case read
    /// Cutting a page into batches (the delivery policy and an A/B split applied).
    case cut
    /// Recording a page's batches in PostgreSQL.
    case record
    /// Waiting for one of the pages producing to finish (the fan-out is that far ahead of the broker).
    case slot
    /// Encoding a page's job records (a templated push's payloads rendered).
    case encode
    /// Waiting for the broker to acknowledge a page's records.
    case broker
    /// Noting a page's batches as produced in PostgreSQL.
    case mark

    var name: String { "\(self)" }
}
