import Configuration

/// herald-api's settings (`HERALD_API_*`); every one is in docs/configuration.md.
public struct APISettings: Sendable {
    /// Where the Open API listens (`HERALD_API_HOST`, `HERALD_API_PORT`; port 0 picks a free one).
    public var host: String
    public var port: Int
    /// The topic push announcements go to through the outbox (`HERALD_API_PUSHES_TOPIC`).
    public var pushesTopic: String
    /// Requests a second each app may make, on average and in a burst
    /// (`HERALD_API_RATE_LIMIT_PER_SECOND`, `HERALD_API_RATE_LIMIT_BURST`).
    public var rateLimitPerSecond: Int
    public var rateLimitBurst: Int
    /// The same for the app's client keys, which draw on buckets of their own
    /// (`HERALD_API_CLIENT_RATE_LIMIT_PER_SECOND`, `HERALD_API_CLIENT_RATE_LIMIT_BURST`): a storm of
    /// registrations from the app's installations cannot starve its back-end.
    public var clientRateLimitPerSecond: Int
    public var clientRateLimitBurst: Int
    /// Of that, what one source address may use (`HERALD_API_CLIENT_RATE_LIMIT_PER_SOURCE_PER_SECOND`,
    /// `HERALD_API_CLIENT_RATE_LIMIT_PER_SOURCE_BURST`; an IPv6 address counts by its /64): the
    /// public client key in a script on one machine cannot use up the app's installations' budget.
    public var clientSourceRateLimitPerSecond: Int
    /// Active devices each app may have (`HERALD_API_MAX_ACTIVE_DEVICES_PER_APP`, 50,000,000;
    /// 0: no quota): a new device past it is refused 403, an imported file too.
    public var maximumActiveDevicesPerApp: Int64
    /// How long an app's count of active devices is used for the quota before it is read again
    /// (`HERALD_API_DEVICE_QUOTA_REFRESH_MS`, 10 s).
    public var deviceQuotaRefresh: Duration
    /// How often a live progress stream checks that its key is not revoked
    /// (`HERALD_API_STREAM_KEY_CHECK_MS`, 5 s); a revoked key's streams end at the next check.
    public var streamKeyCheck: Duration
    public var clientSourceRateLimitBurst: Int
    /// How often each herald-api renews its row in `api_replicas` and recounts the processes
    /// sharing the rate limits (`HERALD_API_REPLICA_HEARTBEAT_MS`); a process not renewed for 3
    /// of these no longer counts. Zero turns the sharing off: this process allows every app the
    /// whole limit.
    public var replicaHeartbeat: Duration
    /// The largest JSON body accepted (`HERALD_API_MAX_BODY_BYTES`).
    public var maximumBodyBytes: Int
    /// The largest bulk import (`HERALD_API_MAX_IMPORT_BYTES`).
    public var maximumImportBytes: Int
    /// Imports this process runs at once, each on a connection of a pool of its own
    /// (`HERALD_API_IMPORT_CONNECTIONS`), so slow uploads never hold the connections every other
    /// request shares. One more answers 429. An app runs one import at a time across processes.
    public var importConnections: Int
    /// An import herald-api has waited for this long (the time it spent on its own work not
    /// counted) is abandoned, nothing of it kept (`HERALD_API_IMPORT_DEADLINE_MS`).
    public var importDeadline: Duration
    /// The slowest upload an import takes, in bytes a second over each 30 s
    /// (`HERALD_API_IMPORT_MIN_BYTES_PER_SECOND`; 0 turns it off).
    public var importMinimumBytesPerSecond: Int
    /// How long an import waits for its database connection (`HERALD_API_IMPORT_CONNECTION_TIMEOUT_MS`).
    public var importConnectionTimeout: Duration
    /// How long each statement of an import's merge may run (`HERALD_API_IMPORT_MERGE_TIMEOUT_MS`,
    /// PostgreSQL's `statement_timeout` for it).
    public var importMergeTimeout: Duration
    /// How long an app key stays cached after a look-up (`HERALD_API_KEY_CACHE_MS`): a key revoked
    /// through another herald-api process stops working within this time.
    public var keyCacheTTL: Duration
    /// Live progress streams (Server-Sent Events) this process serves per app and in all
    /// (`HERALD_API_STREAMS_PER_APP`, `HERALD_API_STREAMS`), and how long one lasts
    /// (`HERALD_API_STREAM_LIFETIME_MS`); the client then reconnects or polls.
    public var streamsPerApp: Int
    public var streams: Int
    public var streamLifetime: Duration
    /// `validate` counts an audience exactly up to this many devices, and estimates past it
    /// (`HERALD_API_VALIDATE_EXACT_UP_TO`).
    public var validateExactUpTo: Int
    /// An operation that has not finished after this long (the database unreachable or stuck)
    /// answers 503 (`HERALD_API_REQUEST_TIMEOUT_MS`); live progress streams and imports have none.
    public var requestTimeout: Duration
    /// PostgreSQL stops a statement of herald-api's pool that runs longer
    /// (`HERALD_API_STATEMENT_TIMEOUT_MS`, `statement_timeout`; default the request timeout and
    /// 5 s): a request answered 503 `timed_out` leaves no query running on. 0 turns it off. Imports
    /// have their own pool and bounds.
    public var statementTimeout: Duration
    /// Statements storing new pushes that may run at once (`HERALD_API_PUSH_WRITERS`); pushes
    /// arriving while all are busy are stored together by the next one, up to
    /// `HERALD_API_PUSH_BATCH` to a statement.
    public var pushWriters: Int
    public var pushBatch: Int
    /// A connection that keeps herald-api waiting this long is closed
    /// (`HERALD_API_IDLE_TIMEOUT_MS`): idle between requests, or a body the server asked for that
    /// does not come. The clock stops while the server works on a request (reading it no faster
    /// than it can handle it, or answering it: a live progress stream stays open).
    public var idleTimeout: Duration
    /// Requests with an unknown key or a wrong admin token one source address may make in a
    /// minute before its requests are refused 429 for the rest of that minute
    /// (`HERALD_API_AUTH_FAILURES_PER_MINUTE`; 0 turns it off).
    public var authenticationFailuresPerMinute: Int
    /// Load balancers and proxies whose `X-Forwarded-For` names the client
    /// (`HERALD_API_TRUSTED_PROXIES`: comma-separated addresses or CIDR ranges; empty, the
    /// default, trusts none). Per-source throttles and the audit log then count the client, not
    /// the balancer; the header of any other peer is ignored (``TrustedProxies``).
    public var trustedProxies: String
    /// The operations port: `/metrics`, `/healthz` and `/readyz` apart from the public API
    /// (`HERALD_API_METRICS_HOST`, `HERALD_API_METRICS_PORT`; 0 turns it off).
    public var metricsHost: String
    public var metricsPort: Int
    /// Also serve `/metrics` on the public API port (`HERALD_API_METRICS_ON_API_PORT`, off by
    /// default: the counters describe every app, and the public port is not the place for them).
    public var metricsOnAPIPort: Bool
    /// The operations console under `/console` (`HERALD_API_CONSOLE_ENABLED`, on by default).
    public var consoleEnabled: Bool
    /// A console session unused for this long ends (`HERALD_API_CONSOLE_IDLE_TIMEOUT_MS`, 30 min),
    /// and any ends this long after sign-in (`HERALD_API_CONSOLE_SESSION_LIFETIME_MS`, 12 h).
    public var consoleIdleTimeout: Duration
    public var consoleSessionLifetime: Duration
    /// Console cookies carry `Secure`, so browsers send them over HTTPS only
    /// (`HERALD_API_CONSOLE_SECURE_COOKIES`; on by default, off in the `herald dev` stack, which
    /// serves plain HTTP on loopback).
    public var consoleSecureCookies: Bool

    init(reader config: ConfigReader) {
        host = config.string(forKey: "api.host", default: "0.0.0.0")
        port = config.int(forKey: "api.port", default: 8080)
        pushesTopic = config.string(forKey: "api.pushesTopic", default: HeraldTopic.pushes.name)
        rateLimitPerSecond = max(1, config.int(forKey: "api.rateLimit.perSecond", default: 1_000))
        rateLimitBurst = max(1, config.int(forKey: "api.rateLimit.burst", default: 2_000))
        clientRateLimitPerSecond = max(1, config.int(forKey: "api.clientRateLimit.perSecond", default: 1_000))
        clientRateLimitBurst = max(1, config.int(forKey: "api.clientRateLimit.burst", default: 2_000))
        clientSourceRateLimitPerSecond = max(
            1, config.int(forKey: "api.clientRateLimit.perSourcePerSecond", default: 50))
        clientSourceRateLimitBurst = max(1, config.int(forKey: "api.clientRateLimit.perSourceBurst", default: 100))
        maximumActiveDevicesPerApp = Int64(
            max(0, config.int(forKey: "api.devices.maxActivePerApp", default: 50_000_000)))
        deviceQuotaRefresh = config.milliseconds(forKey: "api.devices.quotaRefreshMs", default: 10_000, minimum: 0)
        streamKeyCheck = config.milliseconds(forKey: "api.streamKeyCheckMs", default: 5_000, minimum: 0)
        let heartbeat = config.int(forKey: "api.replicaHeartbeatMs", default: 1_000)
        replicaHeartbeat = heartbeat <= 0 ? .zero : .milliseconds(max(100, heartbeat))
        maximumBodyBytes = max(1024, config.int(forKey: "api.maxBodyBytes", default: 1 << 20))
        maximumImportBytes = max(1024, config.int(forKey: "api.maxImportBytes", default: 1 << 30))
        importConnections = max(1, config.int(forKey: "api.importConnections", default: 2))
        importDeadline = config.milliseconds(forKey: "api.importDeadlineMs", default: 900_000, minimum: 1000)
        importMinimumBytesPerSecond = max(0, config.int(forKey: "api.importMinBytesPerSecond", default: 16_384))
        importConnectionTimeout = config.milliseconds(
            forKey: "api.importConnectionTimeoutMs", default: 10_000, minimum: 100)
        importMergeTimeout = config.milliseconds(forKey: "api.importMergeTimeoutMs", default: 600_000, minimum: 1000)
        keyCacheTTL = config.milliseconds(forKey: "api.keyCacheMs", default: 5_000)
        streamsPerApp = max(1, config.int(forKey: "api.streamsPerApp", default: 100))
        streams = max(1, config.int(forKey: "api.streams", default: 2_000))
        streamLifetime = config.milliseconds(forKey: "api.streamLifetimeMs", default: 3_600_000, minimum: 1000)
        validateExactUpTo = max(1, config.int(forKey: "api.validateExactUpTo", default: 100_000))
        requestTimeout = config.milliseconds(forKey: "api.requestTimeoutMs", default: 10_000, minimum: 100)
        statementTimeout = config.milliseconds(
            forKey: "api.statementTimeoutMs", default: Int(requestTimeout.wholeMilliseconds) + 5_000, minimum: 0)
        pushWriters = max(1, config.int(forKey: "api.pushWriters", default: 2))
        pushBatch = max(1, config.int(forKey: "api.pushBatch", default: 64))
        idleTimeout = config.milliseconds(forKey: "api.idleTimeoutMs", default: 60_000, minimum: 100)
        authenticationFailuresPerMinute = max(0, config.int(forKey: "api.authFailuresPerMinute", default: 30))
        trustedProxies = config.string(forKey: "api.trustedProxies", default: "")
        metricsHost = config.string(forKey: "api.metrics.host", default: "0.0.0.0")
        metricsPort = config.int(forKey: "api.metrics.port", default: 9467)
        metricsOnAPIPort = config.bool(forKey: "api.metricsOnApiPort", default: false)
        consoleEnabled = config.bool(forKey: "api.console.enabled", default: true)
        consoleIdleTimeout = config.milliseconds(forKey: "api.console.idleTimeoutMs", default: 1_800_000, minimum: 1000)
        consoleSessionLifetime = config.milliseconds(
            forKey: "api.console.sessionLifetimeMs", default: 43_200_000, minimum: 1000)
        consoleSecureCookies = config.bool(forKey: "api.console.secureCookies", default: true)
    }
}
