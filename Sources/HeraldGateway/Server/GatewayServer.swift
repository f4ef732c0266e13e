import HeraldAccess
import HeraldCore
import HeraldGatewayProtocol
import HeraldTiming
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import ServiceLifecycle
import Synchronization

/// The listener: accepts TLS connections on one port, hands each to a ``TransportSniffer``,
/// sweeps each event loop's connections on a coarse tick, and drains on graceful shutdown —
/// stops accepting, sends every live connection a goaway, waits up to the drain time for clients
/// to leave, closes the rest.
///
/// - Important: call `run()` (in a `ServiceGroup`); ``port`` is the bound port once listening.
public final class GatewayServer: Service, Sendable {
    private let settings: GatewaySettings
    private let tls: NIOSSLContext
    /// The event loops serving connections (the delivery port's too).
    let group: MultiThreadedEventLoopGroup
    let environment: ConnectionEnvironment
    private let connectionLimiter: RateLimiter?
    private let logger: Logger
    private let boundPort = Atomic<Int>(0)
    let metrics: GatewayMetrics

    init(
        settings: GatewaySettings, tls: NIOSSLContext, authenticator: GatewayAuthenticator, metrics: GatewayMetrics,
        name: String,
        logger: Logger
    ) {
        self.settings = settings
        self.tls = tls
        self.logger = logger
        group = MultiThreadedEventLoopGroup(
            numberOfThreads: settings.threads > 0 ? settings.threads : System.coreCount)
        let loops = group.makeIterator().map {
            EventLoopConnections(
                eventLoop: $0, maximumHandshakes: settings.maximumHandshakesPerThread, tick: settings.tick)
        }
        self.metrics = metrics
        environment = ConnectionEnvironment(
            rules: Self.rules(settings), authenticator: authenticator, metrics: metrics, loops: loops, name: name,
            logger: logger)
        connectionLimiter =
            settings.connectionsPerSecond > 0
            ? RateLimiter(ratePerSecond: settings.connectionsPerSecond, burst: settings.connectionBurst) : nil
    }

    /// The connection rules the settings give.
    static func rules(_ settings: GatewaySettings) -> GatewaySession<DeliveryTicket>.Rules {
        var rules = GatewaySession<DeliveryTicket>.Rules()
        rules.helloTimeoutMilliseconds = UInt64(settings.helloTimeout.wholeMilliseconds)
        rules.heartbeatSeconds = UInt32(settings.heartbeatSeconds)
        rules.idleTimeoutSeconds = UInt32(settings.idleTimeoutSeconds)
        rules.ackTimeoutMilliseconds = UInt32(settings.ackTimeout.wholeMilliseconds)
        rules.maximumUnacknowledged = settings.maximumUnacknowledged
        rules.maximumFrameBytes = settings.maximumFrameBytes
        return rules
    }

    /// The port the server listens on, once it does (0 before).
    public var port: Int { boundPort.load(ordering: .relaxed) }

    /// Devices with a live connection here, and the presence changes not yet written.
    var directory: DeviceDirectory { environment.directory }

    public func run() async throws {
        let environment = self.environment
        let tick = TimeAmount.milliseconds(Int64(settings.tick.wholeMilliseconds))
        let sweeps = environment.loops.values.map { loop in
            loop.eventLoop.scheduleRepeatedTask(initialDelay: tick, delay: tick) { _ in
                loop.tick(now: EventLoopConnections.now())
            }
        }
        let channel: Channel
        do {
            channel = try await bootstrap().bind(host: settings.host, port: settings.port).get()
        } catch {
            for sweep in sweeps { sweep.cancel() }
            throw GatewayStartError("herald-gateway cannot listen on \(settings.host):\(settings.port): \(error)")
        }
        boundPort.store(channel.localAddress?.port ?? 0, ordering: .relaxed)
        logger.info("herald-gateway listening", metadata: ["address": "\(settings.host):\(port)"])
        try? await gracefulShutdown()
        try? await channel.close()
        await drain()
        // Before the loops go (``shutdown()``): cancelling a task on a loop that has shut down is
        // an error.
        for sweep in sweeps { sweep.cancel() }
    }

    /// Stops the event loops, once nothing runs on them any more: the server and the delivery
    /// port have returned from `run()` (a channel closed on a loop already shut down would wait
    /// for ever).
    func shutdown() async {
        try? await group.shutdownGracefully()
    }

    private func bootstrap() -> ServerBootstrap {
        let environment = self.environment
        let tls = self.tls
        let limiter = connectionLimiter
        let metrics = self.metrics
        return ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 4096)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            // Idle connections hold almost nothing: reads start small and grow only for the
            // connections that need it (`../shared/GATEWAY.md`, "Receive buffers").
            .childChannelOption(
                .recvAllocator, value: AdaptiveRecvByteBufferAllocator(minimum: 256, initial: 1024, maximum: 65_536)
            )
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            // A client that does not read turns its connection unwritable after 64 KiB waiting:
            // no more pushes are written to it, and it is closed as a slow reader (the handler).
            .childChannelOption(.writeBufferWaterMark, value: .init(low: 16 * 1024, high: 64 * 1024))
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    metrics.accepted.add(1, ordering: .relaxed)
                    let loop = environment.loop(of: channel)
                    guard loop.startHandshake() else {
                        metrics.refusedHandshakes.add(1, ordering: .relaxed)
                        channel.close(promise: nil)
                        return
                    }
                    metrics.openConnections.add(1, ordering: .relaxed)
                    channel.closeFuture.whenComplete { _ in
                        metrics.openConnections.subtract(1, ordering: .relaxed)
                        loop.forget(channel)
                    }
                    let source = channel.remoteAddress?.ipAddress ?? "unknown"
                    var arrival = Arrival(accepted: EventLoopConnections.now(), source: source, refusedForRate: nil)
                    if let limiter {
                        let decision = limiter.take(source: source)
                        if !decision.allowed { arrival.refusedForRate = UInt32(decision.retryAfterSeconds * 1000) }
                    }
                    let sniffer = TransportSniffer(
                        environment: environment, loop: loop, arrival: arrival, channel: channel)
                    loop.track(sniffer, of: channel, due: sniffer.helloDeadline)
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls))
                    try channel.pipeline.syncOperations.addHandler(sniffer)
                }
            }
    }

    /// Tells every connection to go, waits up to the drain time for them to leave, closes the rest.
    private func drain() async {
        let open = metrics.openConnections.load(ordering: .relaxed)
        guard open > 0 else { return }
        logger.info("herald-gateway draining", metadata: ["connections": "\(open)"])
        var goaway = GatewayFrame()
        goaway.goaway = GatewayGoaway.with {
            $0.reconnectAfterMinMilliseconds = UInt32(settings.goawayMinimum.wholeMilliseconds)
            $0.reconnectAfterMaxMilliseconds = UInt32(settings.goawayMaximum.wholeMilliseconds)
            $0.reason = "draining"
        }
        let frame = goaway
        for loop in environment.loops.values {
            loop.eventLoop.execute { loop.goaway(frame) }
        }
        let deadline = ContinuousClock.now + settings.drain
        while metrics.openConnections.load(ordering: .relaxed) > 0, ContinuousClock.now < deadline, !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(50))
        }
        let left = metrics.openConnections.load(ordering: .relaxed)
        if left > 0 {
            logger.notice(
                "herald-gateway closing connections left after the drain", metadata: ["connections": "\(left)"])
            for loop in environment.loops.values {
                try? await loop.eventLoop.submit { loop.closeAll() }.get()
            }
        }
    }
}
