import HeraldAccess
import HeraldGatewayProtocol
import HeraldMetrics
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle
import Synchronization

/// The delivery port (docs/gateway.md, "How Herald routes over it"): senders `POST /v1/deliveries`
/// (Schemas/gateway/deliveries.proto, `application/x-protobuf`) with the pushes of devices
/// connected here, under the bearer ``DeliveryToken`` of the master key (or of a decrypt-only key,
/// so a key rotation does not stop deliveries); the answer, once every
/// push is acknowledged or past its ack timeout, names the devices that acknowledged. Plain
/// HTTP/1.1 inside the cluster: keep it off the public network (the manifests' NetworkPolicy lets
/// only the senders reach it).
///
/// - Important: call `run()`; it serves until graceful shutdown.
final class DeliveryServer: Service, Sendable {
    /// The largest request body (a job batch's targets are at most a few hundred).
    static let maximumBodyBytes = 8 << 20

    private let host: String
    private let port: Int
    private let tokens: [String]
    private let environment: ConnectionEnvironment
    private let group: MultiThreadedEventLoopGroup
    private let boundPort = Atomic<Int>(0)

    /// - Parameter group: the gateway's own event loops, so that a delivery request's pushes for
    ///   connections on the loop it arrived on are written without a hop to another thread (and
    ///   the process runs no second set of loop threads to wake).
    init(
        host: String, port: Int, tokens: [String], environment: ConnectionEnvironment,
        group: MultiThreadedEventLoopGroup
    ) {
        self.host = host
        self.port = port
        self.tokens = tokens
        self.environment = environment
        self.group = group
    }

    /// The port it listens on, once it does.
    var listeningPort: Int { boundPort.load(ordering: .relaxed) }

    func run() async throws {
        let tokens = self.tokens
        let environment = self.environment
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(
                        DeliveryHandler(tokens: tokens, environment: environment))
                }
            }
            .bind(host: host, port: port).get()
        boundPort.store(channel.localAddress?.port ?? 0, ordering: .relaxed)
        try? await gracefulShutdown()
        try? await channel.close()
    }
}

private final class DeliveryHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let tokens: [String]
    private let environment: ConnectionEnvironment
    private var head: HTTPRequestHead?
    private var body: ByteBuffer?
    private var tooLarge = false
    /// The request's token was refused at its head: its body is not kept.
    private var refused = false

    init(tokens: [String], environment: ConnectionEnvironment) {
        self.tokens = tokens
        self.environment = environment
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = nil
            tooLarge = false
            // Checked before any of the body is kept: a caller without the token holds no memory.
            let authorization = head.headers.first(name: "authorization") ?? ""
            refused =
                !(authorization.hasPrefix("Bearer ")
                && tokens.contains { DeliveryToken.matches(authorization.dropFirst(7), $0) })
        case .body(var chunk):
            guard !tooLarge, !refused else { return }
            if (body?.readableBytes ?? 0) + chunk.readableBytes > DeliveryServer.maximumBodyBytes {
                tooLarge = true
                body = nil
            } else if body == nil {
                body = chunk
            } else {
                body!.writeBuffer(&chunk)
            }
        case .end:
            guard let head else { return }
            self.head = nil
            handle(head, context: context)
        }
    }

    private func handle(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        let path = head.path
        guard path == "/v1/deliveries" else {
            return error(context, head, .notFound, "not_found", "The delivery port serves POST /v1/deliveries only.")
        }
        guard head.method == .POST else {
            return error(context, head, .methodNotAllowed, "method_not_allowed", "Deliveries are POSTed.")
        }
        guard !refused else {
            return error(
                context, head, .unauthorized, "unknown_key",
                "The delivery port takes the bearer token derived from HERALD_MASTER_KEY: sender and gateway must share the master key."
            )
        }
        guard !tooLarge else {
            return error(
                context, head, .payloadTooLarge, "payload_too_large",
                "A delivery request is at most \(DeliveryServer.maximumBodyBytes) bytes.")
        }
        let bytes = body.map { Array($0.readableBytesView) } ?? []
        body = nil
        guard let deliveries = try? GatewayDeliveries(serializedBytes: bytes) else {
            return error(
                context, head, .badRequest, "malformed_deliveries",
                "The body is not a Deliveries message (Schemas/gateway/deliveries.proto).")
        }
        let keepAlive = head.isKeepAlive
        let version = head.version
        environment.deliver(deliveries.deliveries, on: context.eventLoop).assumeIsolated().whenComplete { result in
            var results = GatewayDeliveryResults()
            if case .success(let acknowledged) = result { results.acknowledgedDeviceIds = acknowledged }
            let bytes: [UInt8] = (try? results.serializedBytes()) ?? []
            self.respond(
                context, version: version, keepAlive: keepAlive, status: .ok, type: "application/x-protobuf",
                body: context.channel.allocator.buffer(bytes: bytes))
        }
    }

    private func error(
        _ context: ChannelHandlerContext, _ head: HTTPRequestHead, _ status: HTTPResponseStatus, _ code: String,
        _ message: String
    ) {
        body = nil
        respond(
            context, version: head.version, keepAlive: head.isKeepAlive, status: status, type: "application/json",
            body: context.channel.allocator.buffer(
                string: "{\"error\":{\"code\":\"\(code)\",\"message\":\"\(message)\"}}\n"))
    }

    private func respond(
        _ context: ChannelHandlerContext, version: HTTPVersion, keepAlive: Bool, status: HTTPResponseStatus,
        type: String, body: ByteBuffer
    ) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: type)
        headers.add(name: "Content-Length", value: "\(body.readableBytes)")
        if !keepAlive { headers.add(name: "Connection", value: "close") }
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: version, status: status, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive {
            let channel = context.channel
            done.whenComplete { _ in channel.close(promise: nil) }
        }
    }
}
