import HeraldGatewayProtocol
import NIOCore
import NIOSSL
import NIOTLS

/// The first handler after TLS: holds the connection's first four bytes, then sets up the
/// transport they name — `GET ` is a WebSocket upgrade, anything else a framed connection — and
/// steps aside, handing the bytes on. Until then it is what the event loop's sweep sees, so a
/// connection that never finishes its handshake or never sends a byte is closed at the hello's
/// deadline. It also releases the connection's place among the loop's handshakes in progress.
final class TransportSniffer: ChannelInboundHandler, RemovableChannelHandler, SweptConnection {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let environment: ConnectionEnvironment
    private let loop: EventLoopConnections
    private let arrival: Arrival
    private let channel: Channel
    private var held: ByteBuffer?
    private var handshaking = true
    private var chosen = false

    init(environment: ConnectionEnvironment, loop: EventLoopConnections, arrival: Arrival, channel: Channel) {
        self.environment = environment
        self.loop = loop
        self.arrival = arrival
        self.channel = channel
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSUserEvent, case .handshakeCompleted = event {
            finishHandshake()
            environment.metrics.handshakes.add(1, ordering: .relaxed)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        finishHandshake()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        if handshaking { environment.metrics.handshakeFailures.add(1, ordering: .relaxed) }
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        if held == nil {
            held = bytes
        } else {
            held!.writeBuffer(&bytes)
        }
        guard !chosen, let held, held.readableBytes >= 4 else { return }
        chosen = true
        do {
            if FrameLength.opensWebSocket(held.readableBytesView.prefix(4)) {
                environment.metrics.webSocketConnections.add(1, ordering: .relaxed)
                try WebSocketTransport.configure(
                    context.channel, environment: environment, arrival: arrival)
            } else {
                try context.pipeline.syncOperations.addHandlers([
                    ByteToMessageHandler(GatewayFrameDecoder(maximumFrameBytes: environment.rules.maximumFrameBytes)),
                    MessageToByteHandler(GatewayFrameEncoder()),
                    environment.makeConnection(channel: context.channel, arrival: arrival),
                ])
            }
        } catch {
            context.close(promise: nil)
            return
        }
        self.held = nil
        context.fireChannelRead(wrapInboundOut(held))
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    /// Closes a connection still without its transport (or, over WebSocket, without its upgrade)
    /// at the hello's deadline.
    /// When a connection without its transport (or upgrade) is closed: the hello's deadline.
    var helloDeadline: UInt64 { arrival.accepted + environment.rules.helloTimeoutMilliseconds }

    func tick(now: UInt64) {
        guard now >= helloDeadline else { return loop.schedule(channel, due: helloDeadline) }
        environment.metrics.helloTimeouts.add(1, ordering: .relaxed)
        channel.close(promise: nil)
    }

    /// A sniffer is never sent a goaway: the drain closes it with the rest.
    func goaway(_ frame: GatewayFrame) { channel.close(promise: nil) }

    private func finishHandshake() {
        guard handshaking else { return }
        handshaking = false
        loop.handshakeFinished()
    }
}
