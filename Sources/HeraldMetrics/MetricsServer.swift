import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle

/// Serves `GET /metrics` (Prometheus text) on plain HTTP until graceful shutdown.
public final class MetricsServer: Service, Sendable {
    private let host: String
    private let port: Int
    private let render: @Sendable () -> String

    public init(host: String, port: Int, render: @escaping @Sendable () -> String) {
        self.host = host
        self.port = port
        self.render = render
    }

    public func run() async throws {
        let render = self.render
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(MetricsHandler(render: render))
                }
            }
            .bind(host: host, port: port).get()
        try? await gracefulShutdown()
        try? await channel.close()
    }
}

private final class MetricsHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let render: @Sendable () -> String
    private var head: HTTPRequestHead?

    init(render: @escaping @Sendable () -> String) { self.render = render }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): self.head = head
        case .body: break
        case .end:
            guard let head else { return }
            let found = head.method == .GET && (head.uri == "/metrics" || head.uri.hasPrefix("/metrics?"))
            let body = found ? render() : "not found: the metrics are at GET /metrics\n"
            let headers = HTTPHeaders([
                ("content-type", "text/plain; version=0.0.4"), ("content-length", "\(body.utf8.count)"),
                ("connection", "close"),
            ])
            context.write(
                wrapOutboundOut(
                    .head(HTTPResponseHead(version: head.version, status: found ? .ok : .notFound, headers: headers))),
                promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: body)))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
                context.close(promise: nil)
            }
        }
    }
}
