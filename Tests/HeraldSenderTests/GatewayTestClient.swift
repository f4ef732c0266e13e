import Foundation
import HeraldGatewayProtocol
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

@testable import HeraldGateway

/// A device's long connection for tests: TLS to a herald-gateway, the hello, and then every push
/// it receives kept (and acknowledged, when told to), and every revoke.
final class GatewayTestClient: Sendable {
    private let channel: Channel
    private let state: State

    final class State: Sendable {
        let welcomed = Mutex<Bool>(false)
        let pushes = Mutex<[GatewayPush]>([])
        let revokes = Mutex<[GatewayRevoke]>([])
        let errors = Mutex<[String]>([])
    }

    var pushes: [GatewayPush] { state.pushes.withLock { $0 } }
    var revokes: [GatewayRevoke] { state.revokes.withLock { $0 } }
    var isWelcomed: Bool { state.welcomed.withLock { $0 } }
    var errors: [String] { state.errors.withLock { $0 } }

    /// Connects to `port` on loopback (trusting `certificate`) and says hello for the device.
    init(
        port: Int, certificate: NIOSSLCertificate, clientKey: String, token: [UInt8], acknowledges: Bool
    ) async throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates([certificate])
        let context = try NIOSSLContext(configuration: tls)
        let state = State()
        self.state = state
        channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandlers([
                        try NIOSSLClientHandler(context: context, serverHostname: "localhost"),
                        ByteToMessageHandler(GatewayFrameDecoder(maximumFrameBytes: 1 << 20)),
                        MessageToByteHandler(GatewayFrameEncoder()),
                        Reader(state: state, acknowledges: acknowledges),
                    ])
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
        var hello = GatewayFrame()
        hello.hello = GatewayHello.with {
            $0.versions = [1]
            $0.clientKey = clientKey
            $0.deviceToken = token.map { String(format: "%02x", $0) }.joined()
            $0.environment = "sandbox"
        }
        try await channel.writeAndFlush(hello)
    }

    func close() async {
        try? await channel.close()
    }

    private final class Reader: ChannelInboundHandler, Sendable {
        typealias InboundIn = GatewayInbound
        typealias OutboundOut = GatewayFrame

        let state: State
        let acknowledges: Bool

        init(state: State, acknowledges: Bool) {
            self.state = state
            self.acknowledges = acknowledges
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard case .frame(let frame) = unwrapInboundIn(data) else { return }
            switch frame.kind {
            case .welcome?:
                state.welcomed.withLock { $0 = true }
            case .push(let push)?:
                state.pushes.withLock { $0.append(push) }
                guard acknowledges else { return }
                var ack = GatewayFrame()
                ack.ack = GatewayAck.with { $0.delivery = push.delivery }
                context.writeAndFlush(wrapOutboundOut(ack), promise: nil)
            case .revoke(let revoke)?:
                state.revokes.withLock { $0.append(revoke) }
            case .error(let error)?:
                state.errors.withLock { $0.append(error.code) }
            default:
                break
            }
        }
    }
}
