import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle

/// A process's operations port, plain HTTP, until graceful shutdown:
///
/// | request | answer |
/// |---|---|
/// | `GET /metrics` | Prometheus text |
/// | `GET /healthz` | liveness: 200 when every check of `liveness` passes, else 503; JSON naming each check |
/// | `GET /readyz` | readiness: the same for `readiness` (dependencies reachable, work assigned) |
///
/// Checks run when asked (each probe request runs its checks once, concurrently, each within the
/// probe's deadline), so a dependency that comes back turns the process ready by itself.
public final class OperationsServer: Service, Sendable {
    private let host: String
    private let port: Int
    private let routes: Routes

    struct Routes: Sendable {
        let render: @Sendable () -> String
        let liveness: HealthProbe
        let readiness: HealthProbe
    }

    /// - Parameters:
    ///   - service: the process (`herald-api`, …), and `version` its build (`HeraldVersion`), for
    ///     `herald_build_info`.
    ///   - render: the process's own metrics; the process's CPU, memory and descriptors and the
    ///     build are added to them (``ProcessMetrics``).
    public init(
        service: String, version: String, host: String, port: Int,
        liveness: HealthProbe = HealthProbe([.cooperativePool]),
        readiness: HealthProbe, render: @escaping @Sendable () -> String
    ) {
        self.host = host
        self.port = port
        _ = ProcessMetrics.startTime
        self.routes = Routes(
            render: { render() + ProcessMetrics.prometheusText(service: service, version: version) },
            liveness: liveness,
            readiness: readiness)
    }

    public func run() async throws {
        let routes = self.routes
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(OperationsHandler(routes: routes))
                }
            }
            .bind(host: host, port: port).get()
        try? await gracefulShutdown()
        try? await channel.close()
    }
}

private final class OperationsHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let routes: OperationsServer.Routes
    private var head: HTTPRequestHead?

    init(routes: OperationsServer.Routes) { self.routes = routes }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): self.head = head
        case .body: break
        case .end:
            guard let head else { return }
            let path = head.path
            guard head.method == .GET else {
                respond(context, head, .methodNotAllowed, "text/plain", "only GET is served here\n")
                return
            }
            switch path {
            case "/metrics":
                respond(context, head, .ok, "text/plain; version=0.0.4", routes.render())
            case "/healthz", "/readyz":
                let probe = path == "/healthz" ? routes.liveness : routes.readiness
                let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
                let eventLoop = context.eventLoop
                Task {
                    let report = await probe.run()
                    eventLoop.execute {
                        let (handler, context) = loopBound.value
                        handler.respond(
                            context, head, report.passed ? .ok : .serviceUnavailable, "application/json",
                            report.json + "\n")
                    }
                }
            default:
                respond(
                    context, head, .notFound, "text/plain",
                    "not found: this port serves GET /metrics, /healthz and /readyz\n")
            }
        }
    }

    private func respond(
        _ context: ChannelHandlerContext, _ head: HTTPRequestHead, _ status: HTTPResponseStatus, _ type: String,
        _ body: String
    ) {
        let headers = HTTPHeaders([
            ("content-type", type), ("content-length", "\(body.utf8.count)"), ("connection", "close"),
            ("cache-control", "no-store"),
        ])
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))),
            promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: body)))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }
}
