import HeraldGatewayProtocol
import HeraldMetrics
import NIOCore
import NIOHTTP1
import NIOWebSocket

/// The WebSocket road into the same connection (docs/gateway.md, "Connecting"): `GET /v1/connect`
/// upgraded per RFC 6455, each binary message one `Frame`.
enum WebSocketTransport {
    static let path = "/v1/connect"
    static let subprotocol = "herald.gateway.v1"

    /// Puts the HTTP/1.1 server and the upgrader on `channel`; after the upgrade, the aggregator,
    /// the ``WebSocketFrameAdapter`` and the connection itself.
    static func configure(
        _ channel: Channel, environment: ConnectionEnvironment, arrival: Arrival
    ) throws {
        let maximum = environment.rules.maximumFrameBytes
        let upgrader = NIOWebSocketServerUpgrader(
            // Messages up to four times the limit are read and answered `frame_too_large`;
            // longer ones are cut off by NIO with the close code 1009 (message too big).
            maxFrameSize: 4 * maximum,
            automaticErrorHandling: true,
            shouldUpgrade: { channel, head in
                let path = head.path
                guard path == WebSocketTransport.path else { return channel.eventLoop.makeSucceededFuture(nil) }
                var headers = HTTPHeaders()
                let offered = head.headers[canonicalForm: "sec-websocket-protocol"]
                if offered.contains(where: { $0 == WebSocketTransport.subprotocol }) {
                    headers.add(name: "Sec-WebSocket-Protocol", value: WebSocketTransport.subprotocol)
                }
                return channel.eventLoop.makeSucceededFuture(headers)
            },
            upgradePipelineHandler: { channel, _ in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandlers([
                        MaskedFramesOnly(),
                        NIOWebSocketFrameAggregator(
                            minNonFinalFragmentSize: 0, maxAccumulatedFrameCount: 64,
                            maxAccumulatedFrameSize: 4 * maximum),
                        WebSocketFrameAdapter(maximumFrameBytes: maximum),
                        environment.makeConnection(channel: channel, arrival: arrival),
                    ])
                }
            })
        let refusal = NotUpgradedResponder()
        try channel.pipeline.syncOperations.configureHTTPServerPipeline(
            withServerUpgrade: (
                upgraders: [upgrader],
                completionHandler: { context in
                    context.pipeline.syncOperations.removeHandler(refusal, promise: nil)
                }
            ))
        try channel.pipeline.syncOperations.addHandler(refusal)
    }
}

/// Turns WebSocket messages into frames and frames into binary messages; answers WebSocket pings
/// (which do not count as hearing from the client: the protocol's own ping does) and closes.
final class WebSocketFrameAdapter: ChannelDuplexHandler {
    typealias InboundIn = WebSocketFrame
    typealias InboundOut = GatewayInbound
    typealias OutboundIn = GatewayFrame
    typealias OutboundOut = WebSocketFrame

    private let maximumFrameBytes: Int
    private var failed = false
    private var closeSent = false
    /// Messages read: the first (the hello) is held to the limit before the welcome.
    private var messages = 0

    init(maximumFrameBytes: Int) {
        self.maximumFrameBytes = maximumFrameBytes
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let message = unwrapInboundIn(data)
        switch message.opcode {
        case .binary:
            guard !failed else { return }
            // A client's messages are masked (RFC 6455, 5.3).
            let bytes = message.unmaskedData
            let limit = messages == 0 ? min(FrameLength.defaultMaximum, maximumFrameBytes) : maximumFrameBytes
            messages += 1
            guard bytes.readableBytes <= limit else { return fail(.frameTooLarge, context) }
            guard bytes.readableBytes > 0,
                let frame = try? GatewayFrame(serializedBytes: Array(bytes.readableBytesView))
            else { return fail(.malformedFrame, context) }
            context.fireChannelRead(wrapInboundOut(.frame(frame)))
        case .text:
            guard !failed else { return }
            fail(.malformedFrame, context)
        case .ping:
            context.writeAndFlush(
                wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, data: message.unmaskedData)), promise: nil)
        case .connectionClose:
            // The client leaves: answer its close and end the connection.
            sendClose(context, code: .normalClosure)
            context.close(promise: nil)
        default:
            break
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let frame = unwrapOutboundIn(data)
        do {
            let bytes: [UInt8] = try frame.serializedBytes()
            var buffer = context.channel.allocator.buffer(capacity: bytes.count)
            buffer.writeBytes(bytes)
            context.write(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .binary, data: buffer)), promise: promise)
        } catch {
            promise?.fail(error)
        }
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        if mode == .all { sendClose(context, code: .normalClosure) }
        context.close(mode: mode, promise: promise)
    }

    private func fail(_ code: GatewayErrorCode, _ context: ChannelHandlerContext) {
        failed = true
        context.fireChannelRead(wrapInboundOut(.unreadable(code)))
    }

    private func sendClose(_ context: ChannelHandlerContext, code: WebSocketErrorCode) {
        guard !closeSent else { return }
        closeSent = true
        var data = context.channel.allocator.buffer(capacity: 2)
        data.write(webSocketErrorCode: code)
        context.writeAndFlush(
            wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: data)), promise: nil)
    }
}

/// RFC 6455, 5.1: a client masks every frame it sends; a server closes the connection on one that
/// is not (close code 1002). Before the aggregator, which hands on fragments joined and unmasked.
private final class MaskedFramesOnly: ChannelInboundHandler, Sendable {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard unwrapInboundIn(data).maskKey == nil else {
            context.fireChannelRead(data)
            return
        }
        var code = context.channel.allocator.buffer(capacity: 2)
        code.write(webSocketErrorCode: .protocolError)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: code)))
            .whenComplete { _ in channel.close(promise: nil) }
    }
}

/// Answers an HTTP request that is not a WebSocket upgrade of `/v1/connect`, then closes.
private final class NotUpgradedResponder: ChannelInboundHandler, RemovableChannelHandler, Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(let head) = unwrapInboundIn(data) else { return }
        let path = head.path
        let (status, code, message): (HTTPResponseStatus, String, String) =
            path == WebSocketTransport.path
            ? (
                .upgradeRequired, "websocket_required",
                "GET /v1/connect is a WebSocket upgrade (RFC 6455, Upgrade: websocket, subprotocol herald.gateway.v1); see docs/gateway.md."
            )
            : (
                .notFound, "not_found",
                "herald-gateway serves only GET /v1/connect (a WebSocket upgrade) and framed TLS connections; see docs/gateway.md."
            )
        let body = "{\"error\":{\"code\":\"\(code)\",\"message\":\"\(message)\"}}\n"
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        headers.add(name: "Content-Length", value: "\(body.utf8.count)")
        headers.add(name: "Connection", value: "close")
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))),
            promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: body)))), promise: nil)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }
}
