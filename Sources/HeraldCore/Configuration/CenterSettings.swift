import Configuration
import Foundation
import HeraldTiming

/// herald-center's settings (`HERALD_CENTER_*`); every one is in docs/configuration.md.
public struct CenterSettings: Sendable {
    /// This center's name in claims (`HERALD_CENTER_NAME`); by default the host name and process id.
    public var name: String
    /// The consumer group on `herald.pushes` and `herald.outcomes` (`HERALD_CENTER_GROUP_ID`).
    public var groupID: String
    /// Topics (`HERALD_CENTER_PUSHES_TOPIC`, `HERALD_CENTER_JOBS_TOPIC`, `HERALD_CENTER_OUTCOMES_TOPIC`).
    public var pushesTopic: String
    public var jobsTopic: String
    public var outcomesTopic: String
    /// Where transactional pushes' job batches go (`HERALD_CENTER_TRANSACTIONAL_JOBS_TOPIC`).
    public var transactionalJobsTopic: String
    /// Devices read from PostgreSQL per keyset page (`HERALD_CENTER_PAGE_SIZE`).
    public var pageSize: Int
    /// Targets per job batch (`HERALD_CENTER_BATCH_SIZE`, at most 500).
    public var batchSize: Int
    /// The most targets a job batch holds: what its Kafka record takes
    /// (`Herald_V1_JobBatch.maximumTargets` in HeraldRecords; a test holds the two equal).
    public static let maximumBatchSize = 500
    /// Pushes fanned out at once by this center (`HERALD_CENTER_MAX_FANOUTS`): broadcasts, tag
    /// and segment audiences (the `bulk` lane).
    public var maxConcurrentFanouts: Int
    /// List-audience pushes (registration ids, aliases) fanned out at once beside them
    /// (`HERALD_CENTER_MAX_EXPRESS_FANOUTS`; 0: they share the bulk slots).
    public var maxExpressFanouts: Int
    /// Throttled pushes and recalls fanned out at once beside them
    /// (`HERALD_CENTER_MAX_PACED_FANOUTS`; 0: they share the bulk slots).
    public var maxPacedFanouts: Int
    /// A fan-out claim not renewed for this long is taken over by another center
    /// (`HERALD_CENTER_CLAIM_LEASE_MS`).
    public var claimLease: Duration
    /// How often the center looks for due schedules, orphaned fan-outs and unaccounted
    /// cancellations (`HERALD_CENTER_SWEEP_INTERVAL_MS`).
    public var sweepInterval: Duration
    /// A produced batch with no outcome after this long is produced again
    /// (`HERALD_CENTER_REDRIVE_AFTER_MS`).
    public var redriveAfter: Duration
    /// An unthrottled fan-out runs at most this many notifications ahead of their outcomes: past
    /// it, it holds before its next page until the senders catch up (`HERALD_CENTER_FANOUT_WINDOW`;
    /// 0: no bound).
    public var fanoutWindow: Int
    /// A fan-out held at its window this long closes its audience stream, so no COPY statement
    /// stays open while the senders are slow or away (`HERALD_CENTER_FANOUT_HOLD_CLOSE_MS`).
    public var fanoutHoldCloseAfter: Duration
    /// A batch re-driven this many times that still gets no outcome is ended: every target
    /// rejected with the reason `Undeliverable` (`HERALD_CENTER_MAX_REDRIVES`).
    public var maxRedrives: Int
    /// Invalid tokens older than this many days are deleted (`HERALD_CENTER_PURGE_INVALID_AFTER_DAYS`; 0 keeps them).
    public var purgeInvalidAfterDays: Int
    /// How often the outbox is published (`HERALD_CENTER_OUTBOX_INTERVAL_MS`; 0 turns the relay off).
    public var outboxInterval: Duration
    /// Published outbox records older than this are deleted, checked once a minute
    /// (`HERALD_CENTER_OUTBOX_RETENTION_MS`, one hour; 0 keeps them for ever).
    public var outboxRetention: Duration
    /// Finished pushes older than this many days are deleted with their counters, batches and
    /// failed deliveries, their numbers kept per app and day for the statistics
    /// (`HERALD_CENTER_PUSH_RETENTION_DAYS`, 90; 0 keeps them for ever).
    public var pushRetentionDays: Int
    /// Audit log entries older than this many days are deleted (`HERALD_CENTER_AUDIT_RETENTION_DAYS`,
    /// 400; at least 30, which the database enforces; 0 keeps them for ever).
    public var auditRetentionDays: Int
    /// How often the retention runs (`HERALD_CENTER_RETENTION_INTERVAL_MS`, ten minutes).
    public var retentionInterval: Duration
    /// How often the device counts' changes are folded into the counts
    /// (`HERALD_CENTER_DEVICE_COUNT_INTERVAL_MS`, two seconds; 0 turns folding off, and reads
    /// then add up every change since the last fold).
    public var deviceCountInterval: Duration
    /// Webhook requests in flight in this center at most (`HERALD_CENTER_WEBHOOK_MAX_IN_FLIGHT`,
    /// 64; 0: this center delivers no webhooks).
    public var webhookMaxInFlight: Int
    /// The webhook settings' defaults, read by the configuration and by the dispatcher's own
    /// settings alike (docs/configuration.md).
    public static let defaultWebhookMaxInFlight = 64
    public static let defaultWebhookTimeout: Duration = .seconds(10)
    public static let defaultWebhookFirstRetry: Duration = .seconds(30)
    public static let defaultWebhookRetryWindow: Duration = .seconds(24 * 3600)
    /// One app's share of the webhook requests in flight by default: a quarter, at least one.
    public static func defaultWebhookMaxInFlightPerApp(of maxInFlight: Int) -> Int { max(1, maxInFlight / 4) }
    /// Of those, one app's at most (`HERALD_CENTER_WEBHOOK_MAX_IN_FLIGHT_PER_APP`, a quarter of
    /// them, at least 1): an app whose endpoints hang leaves the rest to the other apps.
    public var webhookMaxInFlightPerApp: Int
    /// A webhook request without an answer in this time failed (`HERALD_CENTER_WEBHOOK_TIMEOUT_MS`, 10 s).
    public var webhookTimeout: Duration
    /// The first retry of a failed webhook delivery; each next one doubles, up to an hour
    /// (`HERALD_CENTER_WEBHOOK_FIRST_RETRY_MS`, 30 s).
    public var webhookFirstRetry: Duration
    /// How long after its event (or its replay) a delivery is tried before it is dead
    /// (`HERALD_CENTER_WEBHOOK_RETRY_WINDOW_MS`, 24 hours).
    public var webhookRetryWindow: Duration
    /// Whether webhook requests may reach addresses that are not public — loopback, private
    /// ranges, link-local (`HERALD_CENTER_WEBHOOK_PRIVATE_NETWORKS`, `deny`; `allow` for receivers
    /// inside the network, the dev stack's on loopback).
    public var webhookAllowPrivateNetworks: Bool
    /// The Prometheus endpoint (`HERALD_CENTER_METRICS_HOST`, `HERALD_CENTER_METRICS_PORT`; 0 turns it off).
    public var metricsHost: String
    public var metricsPort: Int

    init(reader config: ConfigReader) {
        let host = ProcessInfo.processInfo.hostName
        name = config.string(forKey: "center.name", default: "\(host)-\(ProcessInfo.processInfo.processIdentifier)")
        groupID = config.string(forKey: "center.groupId", default: "herald-center")
        pushesTopic = config.string(forKey: "center.pushesTopic", default: HeraldTopic.pushes.name)
        jobsTopic = config.string(forKey: "center.jobsTopic", default: HeraldTopic.jobs.name)
        transactionalJobsTopic = config.string(
            forKey: "center.transactionalJobsTopic", default: HeraldTopic.transactionalJobs.name)
        outcomesTopic = config.string(forKey: "center.outcomesTopic", default: HeraldTopic.outcomes.name)
        pageSize = max(1, config.int(forKey: "center.pageSize", default: 10_000))
        batchSize = min(
            Self.maximumBatchSize, max(1, config.int(forKey: "center.batchSize", default: Self.maximumBatchSize)))
        maxConcurrentFanouts = max(1, config.int(forKey: "center.maxFanouts", default: 4))
        maxExpressFanouts = max(0, config.int(forKey: "center.maxExpressFanouts", default: 16))
        maxPacedFanouts = max(0, config.int(forKey: "center.maxPacedFanouts", default: 64))
        claimLease = config.milliseconds(forKey: "center.claimLeaseMs", default: 30_000, minimum: 100)
        sweepInterval = config.milliseconds(forKey: "center.sweepIntervalMs", default: 500, minimum: 10)
        redriveAfter = config.milliseconds(forKey: "center.redriveAfterMs", default: 600_000, minimum: 1000)
        maxRedrives = max(0, config.int(forKey: "center.maxRedrives", default: 5))
        fanoutWindow = max(0, config.int(forKey: "center.fanoutWindow", default: 1_000_000))
        fanoutHoldCloseAfter = config.milliseconds(forKey: "center.fanoutHoldCloseMs", default: 5_000)
        purgeInvalidAfterDays = max(0, config.int(forKey: "center.purgeInvalidAfterDays", default: 30))
        outboxInterval = config.milliseconds(forKey: "center.outboxIntervalMs", default: 100)
        outboxRetention = config.milliseconds(forKey: "center.outboxRetentionMs", default: 3_600_000)
        pushRetentionDays = max(0, config.int(forKey: "center.pushRetentionDays", default: 90))
        let audit = max(0, config.int(forKey: "center.auditRetentionDays", default: 400))
        auditRetentionDays = audit == 0 ? 0 : max(30, audit)
        retentionInterval = config.milliseconds(forKey: "center.retentionIntervalMs", default: 600_000, minimum: 1000)
        deviceCountInterval = config.milliseconds(forKey: "center.deviceCountIntervalMs", default: 2000)
        webhookMaxInFlight = max(
            0, config.int(forKey: "center.webhook.maxInFlight", default: Self.defaultWebhookMaxInFlight))
        webhookMaxInFlightPerApp = max(
            1,
            config.int(
                forKey: "center.webhook.maxInFlightPerApp",
                default: Self.defaultWebhookMaxInFlightPerApp(of: webhookMaxInFlight)))
        webhookTimeout = config.milliseconds(
            forKey: "center.webhook.timeoutMs", default: Int(Self.defaultWebhookTimeout.wholeMilliseconds),
            minimum: 100)
        webhookFirstRetry = config.milliseconds(
            forKey: "center.webhook.firstRetryMs", default: Int(Self.defaultWebhookFirstRetry.wholeMilliseconds),
            minimum: 100)
        webhookRetryWindow = config.milliseconds(
            forKey: "center.webhook.retryWindowMs", default: Int(Self.defaultWebhookRetryWindow.wholeMilliseconds),
            minimum: 1000)
        webhookAllowPrivateNetworks =
            config.string(forKey: "center.webhook.privateNetworks", default: "deny").lowercased() == "allow"
        metricsHost = config.string(forKey: "center.metrics.host", default: "0.0.0.0")
        metricsPort = config.int(forKey: "center.metrics.port", default: 9466)
    }
}
