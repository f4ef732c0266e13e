import Configuration

/// herald-gateway's settings (`HERALD_GATEWAY_*`); every one is in docs/configuration.md, and the
/// protocol's limits (the frame size, the timeouts) are also named in docs/gateway.md.
public struct GatewaySettings: Sendable {
    /// Where clients connect (`HERALD_GATEWAY_HOST`, `HERALD_GATEWAY_PORT`): TLS, framed or WebSocket.
    public var host: String
    public var port: Int
    /// The server's certificate chain and its private key, PEM (`HERALD_GATEWAY_TLS_CERTIFICATE_FILE`,
    /// `HERALD_GATEWAY_TLS_KEY_FILE`). Required: the gateway speaks only TLS.
    public var tlsCertificateFile: String?
    public var tlsKeyFile: String?
    /// This gateway's name in connection ids, logs and its presence lease (`HERALD_GATEWAY_NAME`;
    /// the host's name when unset: a pod's name in Kubernetes).
    public var name: String?
    /// Event-loop threads serving connections (`HERALD_GATEWAY_THREADS`; 0: one per core).
    public var threads: Int
    /// Time from connecting to the hello (`HERALD_GATEWAY_HELLO_TIMEOUT_MS`, 10 s).
    public var helloTimeout: Duration
    /// The heartbeat the welcome asks for, and the silence after which a connection is closed
    /// (`HERALD_GATEWAY_HEARTBEAT_SECONDS` 60, `HERALD_GATEWAY_IDLE_TIMEOUT_SECONDS` 150).
    public var heartbeatSeconds: Int
    public var idleTimeoutSeconds: Int
    /// Time a push waits for its ack before it also goes through APNs
    /// (`HERALD_GATEWAY_ACK_TIMEOUT_MS`, 2 s).
    public var ackTimeout: Duration
    /// Pushes sent and not acknowledged on one connection; one more is `slow_reader`
    /// (`HERALD_GATEWAY_MAX_UNACKNOWLEDGED`, 64).
    public var maximumUnacknowledged: Int
    /// The largest frame either way (`HERALD_GATEWAY_MAX_FRAME_BYTES`, 16,384; at least 6,144, so
    /// a push with the largest APNs payload, a VoIP one's 5,120 bytes, fits with its fields).
    public var maximumFrameBytes: Int
    /// Failed authentications (unknown keys, unknown devices) one source address may have in a
    /// minute before its further failures are answered `too_many_failed_authentications`
    /// (`HERALD_GATEWAY_AUTH_FAILURES_PER_MINUTE`, 20; 0 turns it off). A valid hello is never refused.
    public var authenticationFailuresPerMinute: Int
    /// New connections one source address may open a second, on average and at once
    /// (`HERALD_GATEWAY_CONNECTIONS_PER_SECOND` 50, `HERALD_GATEWAY_CONNECTION_BURST` 200; 0 turns it off).
    public var connectionsPerSecond: Int
    public var connectionBurst: Int
    /// TLS handshakes in progress one event loop allows; past it a new connection is closed at
    /// once, before its handshake costs anything (`HERALD_GATEWAY_MAX_HANDSHAKES_PER_THREAD`, 256).
    public var maximumHandshakesPerThread: Int
    /// How long a looked-up client key is trusted before it is looked up again
    /// (`HERALD_GATEWAY_KEY_CACHE_TTL_MS`, 10 s): a revoked key stops new connections within it.
    public var keyCacheTTL: Duration
    /// How often each event loop sweeps its connections for timeouts (`HERALD_GATEWAY_TICK_MS`,
    /// 250 ms): the resolution of every timeout above.
    public var tick: Duration
    /// On SIGTERM: the goaway's reconnect window (`HERALD_GATEWAY_GOAWAY_MIN_MS` 1 s,
    /// `HERALD_GATEWAY_GOAWAY_MAX_MS` 10 s), and how long the gateway lets clients leave before it
    /// closes what is left (`HERALD_GATEWAY_DRAIN_MS`, 5 s; keep it within the pod's termination
    /// grace period).
    public var goawayMinimum: Duration
    public var goawayMaximum: Duration
    public var drain: Duration
    /// The delivery port, where senders hand this gateway its devices' pushes
    /// (`HERALD_GATEWAY_DELIVERY_HOST`, `HERALD_GATEWAY_DELIVERY_PORT` 7444), and the address
    /// senders reach it at, stored with the presence lease (`HERALD_GATEWAY_DELIVERY_ADDRESS`;
    /// `<host name>:<port>` when unset: in Kubernetes set it to the pod's IP and the port).
    public var deliveryHost: String
    public var deliveryPort: Int
    public var deliveryAddress: String?
    /// Presence in PostgreSQL: the lease a gateway renews every third of it, after which its
    /// routes expire (`HERALD_GATEWAY_PRESENCE_LEASE_MS`, 15 s), and how often connects and
    /// leaves are written, in one batch (`HERALD_GATEWAY_PRESENCE_FLUSH_MS`, 200 ms).
    public var presenceLease: Duration
    public var presenceFlush: Duration
    /// The operations endpoint, `/metrics`, `/healthz`, `/readyz` (`HERALD_GATEWAY_METRICS_HOST`,
    /// `HERALD_GATEWAY_METRICS_PORT` 9468; port 0 turns it off).
    public var metricsHost: String
    public var metricsPort: Int

    init(reader config: ConfigReader) throws(SettingError) {
        host = config.string(forKey: "gateway.host", default: "0.0.0.0")
        port = config.int(forKey: "gateway.port", default: 7443)
        tlsCertificateFile = try config.readableFile(
            forKey: "gateway.tlsCertificateFile", variable: "HERALD_GATEWAY_TLS_CERTIFICATE_FILE")
        tlsKeyFile = try config.readableFile(forKey: "gateway.tlsKeyFile", variable: "HERALD_GATEWAY_TLS_KEY_FILE")
        guard (tlsCertificateFile == nil) == (tlsKeyFile == nil) else {
            throw SettingError(
                "HERALD_GATEWAY_TLS_CERTIFICATE_FILE and HERALD_GATEWAY_TLS_KEY_FILE go together: set both or neither")
        }
        name = config.string(forKey: "gateway.name").flatMap { $0.isEmpty ? nil : $0 }
        threads = max(0, config.int(forKey: "gateway.threads", default: 0))
        helloTimeout = config.milliseconds(forKey: "gateway.helloTimeoutMs", default: 10_000, minimum: 100)
        heartbeatSeconds = max(1, config.int(forKey: "gateway.heartbeatSeconds", default: 60))
        idleTimeoutSeconds = max(heartbeatSeconds + 1, config.int(forKey: "gateway.idleTimeoutSeconds", default: 150))
        ackTimeout = config.milliseconds(forKey: "gateway.ackTimeoutMs", default: 2_000, minimum: 10)
        maximumUnacknowledged = max(1, config.int(forKey: "gateway.maxUnacknowledged", default: 64))
        maximumFrameBytes = min(1 << 20, max(6_144, config.int(forKey: "gateway.maxFrameBytes", default: 16_384)))
        authenticationFailuresPerMinute = max(0, config.int(forKey: "gateway.authFailuresPerMinute", default: 20))
        connectionsPerSecond = max(0, config.int(forKey: "gateway.connectionsPerSecond", default: 50))
        connectionBurst = max(1, config.int(forKey: "gateway.connectionBurst", default: 200))
        maximumHandshakesPerThread = max(1, config.int(forKey: "gateway.maxHandshakesPerThread", default: 256))
        keyCacheTTL = config.milliseconds(forKey: "gateway.keyCacheTtlMs", default: 10_000)
        tick = config.milliseconds(forKey: "gateway.tickMs", default: 250, minimum: 10)
        goawayMinimum = config.milliseconds(forKey: "gateway.goawayMinMs", default: 1_000)
        goawayMaximum = max(
            goawayMinimum, config.milliseconds(forKey: "gateway.goawayMaxMs", default: 10_000))
        drain = config.milliseconds(forKey: "gateway.drainMs", default: 5_000)
        deliveryHost = config.string(forKey: "gateway.delivery.host", default: "0.0.0.0")
        deliveryPort = config.int(forKey: "gateway.delivery.port", default: 7444)
        deliveryAddress = config.string(forKey: "gateway.delivery.address").flatMap { $0.isEmpty ? nil : $0 }
        presenceLease = config.milliseconds(forKey: "gateway.presenceLeaseMs", default: 15_000, minimum: 1_000)
        presenceFlush = config.milliseconds(forKey: "gateway.presenceFlushMs", default: 200, minimum: 10)
        metricsHost = config.string(forKey: "gateway.metrics.host", default: "0.0.0.0")
        metricsPort = config.int(forKey: "gateway.metrics.port", default: 9468)
    }
}
