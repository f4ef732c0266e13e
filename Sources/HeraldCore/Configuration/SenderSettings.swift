import Configuration
import HeraldAPNsVocabulary
import HeraldTiming

/// herald-sender's settings (`HERALD_SENDER_*`); every one is in docs/configuration.md.
public struct SenderSettings: Sendable {
    /// The consumer group on `herald.jobs` (`HERALD_SENDER_GROUP_ID`).
    public var groupID: String
    /// Where job batches come from and outcomes go (`HERALD_SENDER_JOBS_TOPIC`,
    /// `HERALD_SENDER_OUTCOMES_TOPIC`); the defaults are Herald's topics.
    public var jobsTopic: String
    public var outcomesTopic: String
    /// Transactional pushes' job batches (`HERALD_SENDER_TRANSACTIONAL_JOBS_TOPIC`), read by a
    /// consumer of their own in the group `HERALD_SENDER_TRANSACTIONAL_GROUP_ID` (by default the
    /// sender group's name with `.transactional` appended).
    public var transactionalJobsTopic: String
    public var transactionalGroupID: String
    /// Transactional job batches being sent at once, beside `maxBatchesInFlight` campaign ones
    /// (`HERALD_SENDER_MAX_TRANSACTIONAL_BATCHES_IN_FLIGHT`).
    public var maxTransactionalBatchesInFlight: Int
    /// HTTP/2 connections per app credential and environment (`HERALD_SENDER_CONNECTIONS`).
    public var connections: Int
    /// Notifications in flight per credential (`HERALD_SENDER_MAX_IN_FLIGHT`).
    public var maxInFlight: Int
    /// Campaign job batches being sent at once; the worker pulls no more while they are
    /// (`HERALD_SENDER_MAX_BATCHES_IN_FLIGHT`, default ``defaultMaxBatchesInFlight``).
    public var maxBatchesInFlight: Int
    /// 32. A batch lasts as long as its slowest answer, so at a real APNs round trip with a long
    /// tail few batches leave the connections idle: with 8 batches and apns-sim answering after
    /// an exponential 50 ms a sender did 11,000/s where h2load on the same connections did
    /// 36,000; with 32, 37,000 (docs/benchmarks.md, `make bench-sender-latency`). The
    /// notifications in flight stay bounded by `maxInFlight` whatever the batches.
    public static let defaultMaxBatchesInFlight = 32
    /// Campaign job batches whose connected targets are at the gateways at once, whatever their
    /// channel (`auto` or `online`) (`HERALD_SENDER_MAX_ONLINE_BATCHES_IN_FLIGHT`, default
    /// ``defaultMaxOnlineBatchesInFlight``); a batch over it sends its other targets through APNs
    /// and waits for its turn to hand the connected ones over (and with them the APNs fallback of
    /// those that do not acknowledge). Transactional batches do not count against it.
    public var maxOnlineBatchesInFlight: Int
    /// 8. Each batch at the gateways holds its pushes there until the phones acknowledge or the
    /// gateways' ack timeout passes; with all 32 batches handed over at once, the end-to-end
    /// online test's 8,000 phones (sharing this machine's two cores with the whole stack)
    /// acknowledged 218 of 7,200 pushes too late (docs/benchmarks.md), with 8 none.
    public static let defaultMaxOnlineBatchesInFlight = 8
    /// Each APNs request's deadline (`HERALD_SENDER_REQUEST_TIMEOUT_MS`).
    public var requestTimeout: Duration
    /// Attempts per notification, the first included (`HERALD_SENDER_MAX_ATTEMPTS`).
    public var maxAttempts: Int
    /// The waits between attempts: the first at most `HERALD_SENDER_RETRY_BASE_MS`, doubling per
    /// attempt up to `HERALD_SENDER_RETRY_MAX_MS`, each drawn between half and all of that.
    public var retryBackoff: Backoff
    /// The defaults of `maxAttempts` and `retryBackoff` (8 attempts; 200 ms doubling to 30 s): the
    /// sender's retry policy, also `RetryPolicy`'s default.
    public static let defaultMaxAttempts = 8
    public static let defaultRetryBackoff = Backoff(initial: .milliseconds(200), maximum: .seconds(30))
    /// Another copy of a batch whose sending started longer ago than this may be sent
    /// (`HERALD_SENDER_BATCH_TAKEOVER_MS`); a younger one is left to finish. Keep it below the
    /// center's re-drive time, so a batch whose outcome was lost is sent again when re-driven.
    public var batchTakeover: Duration
    /// When the group takes partitions away (a sender joins or leaves), how long the sender
    /// finishes the batches of those partitions it already holds before giving them back
    /// (`HERALD_SENDER_REVOKE_GRACE_MS`, 15 s, at most 60 s; 0 gives them back at once, and the next owner
    /// sends what was in flight a second time). The whole group's rebalance waits meanwhile.
    public var revokeGrace: Duration
    /// APNs hosts (`HERALD_SENDER_APNS_PRODUCTION_HOST`/`_PORT`, `HERALD_SENDER_APNS_SANDBOX_HOST`/`_PORT`).
    public var productionHost: String
    public var productionPort: Int
    public var sandboxHost: String
    public var sandboxPort: Int
    /// PEM files of certificates each endpoint trusts besides the system's roots (apns-sim's), or
    /// nil (`HERALD_SENDER_APNS_PRODUCTION_TRUST_CERTIFICATE_FILE`,
    /// `HERALD_SENDER_APNS_SANDBOX_TRUST_CERTIFICATE_FILE`). One endpoint's file never applies to
    /// the other, so trusting a simulator for sandbox leaves delivery to Apple as it was.
    public var productionTrustCertificateFile: String?
    public var sandboxTrustCertificateFile: String?
    /// The setting one file for both endpoints had, which replaced the system's roots; no longer
    /// read (see ``checkTrustSettings()``).
    var retiredTrustCertificateFile: String?
    /// The Prometheus endpoint (`HERALD_SENDER_METRICS_HOST`, `HERALD_SENDER_METRICS_PORT`; port 0
    /// turns it off).
    /// An app's APNs client that no batch used for this long is closed
    /// (`HERALD_SENDER_APNS_CLIENT_IDLE_MS`, 30 minutes; 0 keeps them), and at most this many run
    /// at once, the least recently used closing first (`HERALD_SENDER_APNS_MAX_CLIENTS`, 1000).
    public var apnsClientIdle: Duration
    public var maximumAPNsClients: Int
    public var metricsHost: String
    public var metricsPort: Int
    /// The long-connection road (docs/gateway.md): hand connected devices' pushes to their
    /// herald-gateway first (`HERALD_SENDER_ONLINE`, true), wait at most this long for a
    /// gateway's answer (`HERALD_SENDER_ONLINE_TIMEOUT_MS`, 5 s: past the gateways' ack timeout),
    /// and remember "anyone of this app connected?" this long (`HERALD_SENDER_PRESENCE_CACHE_MS`, 1 s).
    public var onlineDelivery: Bool
    public var onlineTimeout: Duration
    public var presenceCache: Duration

    init(reader config: ConfigReader) {
        groupID = config.string(forKey: "sender.groupId", default: "herald-sender")
        jobsTopic = config.string(forKey: "sender.jobsTopic", default: HeraldTopic.jobs.name)
        outcomesTopic = config.string(forKey: "sender.outcomesTopic", default: HeraldTopic.outcomes.name)
        transactionalJobsTopic = config.string(
            forKey: "sender.transactionalJobsTopic", default: HeraldTopic.transactionalJobs.name)
        transactionalGroupID = config.string(
            forKey: "sender.transactionalGroupId", default: "\(groupID).transactional")
        maxTransactionalBatchesInFlight = max(
            1, config.int(forKey: "sender.maxTransactionalBatchesInFlight", default: 8))
        connections = config.int(forKey: "sender.connections", default: 2)
        maxInFlight = config.int(forKey: "sender.maxInFlight", default: 2000)
        maxBatchesInFlight = max(
            1, config.int(forKey: "sender.maxBatchesInFlight", default: Self.defaultMaxBatchesInFlight))
        maxOnlineBatchesInFlight = max(
            1, config.int(forKey: "sender.maxOnlineBatchesInFlight", default: Self.defaultMaxOnlineBatchesInFlight))
        requestTimeout = config.milliseconds(forKey: "sender.requestTimeoutMs", default: 10_000, minimum: 1)
        maxAttempts = config.int(forKey: "sender.maxAttempts", default: Self.defaultMaxAttempts)
        retryBackoff = Backoff(
            initial: config.milliseconds(
                forKey: "sender.retryBaseMs", default: Int(Self.defaultRetryBackoff.initial.wholeMilliseconds),
                minimum: 1),
            maximum: config.milliseconds(
                forKey: "sender.retryMaxMs", default: Int(Self.defaultRetryBackoff.maximum.wholeMilliseconds),
                minimum: 1))
        batchTakeover = config.milliseconds(forKey: "sender.batchTakeoverMs", default: 300_000)
        // At most a minute: the whole group waits, and far below max.poll.interval.ms (300 s).
        revokeGrace = min(.seconds(60), config.milliseconds(forKey: "sender.revokeGraceMs", default: 15_000))
        productionHost = config.string(
            forKey: "sender.apns.production.host", default: APNsEnvironment.production.appleHost)
        productionPort = config.int(forKey: "sender.apns.production.port", default: APNsEnvironment.applePort)
        sandboxHost = config.string(forKey: "sender.apns.sandbox.host", default: APNsEnvironment.sandbox.appleHost)
        sandboxPort = config.int(forKey: "sender.apns.sandbox.port", default: APNsEnvironment.applePort)
        productionTrustCertificateFile = config.string(forKey: "sender.apns.production.trustCertificateFile")
        sandboxTrustCertificateFile = config.string(forKey: "sender.apns.sandbox.trustCertificateFile")
        retiredTrustCertificateFile = config.string(forKey: "sender.apns.trustCertificateFile")
        let idle = config.int(forKey: "sender.apns.clientIdleMs", default: 1_800_000)
        apnsClientIdle = idle <= 0 ? .zero : .milliseconds(max(1000, idle))
        maximumAPNsClients = max(1, config.int(forKey: "sender.apns.maxClients", default: 1000))
        metricsHost = config.string(forKey: "sender.metrics.host", default: "0.0.0.0")
        metricsPort = config.int(forKey: "sender.metrics.port", default: 9465)
        onlineDelivery = config.bool(forKey: "sender.online", default: true)
        onlineTimeout = config.milliseconds(forKey: "sender.onlineTimeoutMs", default: 5_000, minimum: 100)
        presenceCache = config.milliseconds(forKey: "sender.presenceCacheMs", default: 1_000)
    }

    /// Refuses the retired `HERALD_SENDER_APNS_TRUST_CERTIFICATE_FILE`: it made one file the
    /// only roots of both endpoints, and reading it either way now would change what a running
    /// deployment trusts without a word.
    public func checkTrustSettings() throws(SettingError) {
        guard let file = retiredTrustCertificateFile else { return }
        throw SettingError(
            "HERALD_SENDER_APNS_TRUST_CERTIFICATE_FILE (\(file)) is no longer read: set "
                + "HERALD_SENDER_APNS_SANDBOX_TRUST_CERTIFICATE_FILE or HERALD_SENDER_APNS_PRODUCTION_TRUST_CERTIFICATE_FILE, "
                + "whose certificates that endpoint trusts besides the system's")
    }
}
