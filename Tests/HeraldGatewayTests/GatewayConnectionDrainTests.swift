import Foundation
import HeraldGatewayProtocol
import Logging
import NIOCore
import NIOEmbedded
import Testing

@testable import HeraldGateway

/// A welcomed connection (its hello accepted without a database) on a testing channel: how a drain
/// closes it, and what it answers while the socket takes nothing.
@Suite("gateway connection: a welcomed connection's drain and pings")
struct GatewayConnectionDrainTests {
    /// Accepts every hello as device 7 of one app.
    struct Accepting: HelloAuthenticating {
        func authenticate(_ hello: GatewayHello, source: String) async -> GatewayAuthenticator.Verdict {
            .accepted(.init(appID: UUID(), deviceID: 7))
        }
    }

    /// Sits below the connection as the socket would: keeps every frame written; while `stuck`,
    /// holds each write unfinished (the peer takes nothing); while `lingering`, holds a close
    /// as TLS does while it waits for the client's close_notify. Confined to the channel's loop.
    final class Socket: ChannelOutboundHandler {
        typealias OutboundIn = GatewayFrame
        var stuck = false
        var lingering = false
        var frames: [GatewayFrame] = []
        var held: [EventLoopPromise<Void>] = []
        var closesAsked = 0

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            frames.append(unwrapOutboundIn(data))
            if stuck {
                if let promise { held.append(promise) }
            } else {
                promise?.succeed()
            }
        }

        func flush(context: ChannelHandlerContext) {}

        func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
            closesAsked += 1
            guard !lingering else { return }
            for promise in held { promise.fail(ChannelError.ioOnClosedChannel) }
            held = []
            context.close(mode: mode, promise: promise)
        }

        func kinds() -> [String] {
            frames.map { frame in
                switch frame.kind {
                case .welcome?: "welcome"
                case .pong?: "pong"
                case .goaway?: "goaway"
                case .error(let error)?: error.code
                default: "other"
                }
            }
        }
    }

    struct Connection {
        let channel: NIOAsyncTestingChannel
        let socket: NIOLoopBound<Socket>
        let handler: NIOLoopBound<GatewayConnectionHandler>
        let metrics: GatewayMetrics

        /// Runs `body` on the channel's event loop, where the handler and the socket live.
        func onLoop<Result: Sendable>(
            _ body: @escaping @Sendable (GatewayConnectionHandler, Socket) throws -> Result
        ) async throws -> Result {
            try await channel.testingEventLoop.executeInContext { [handler, socket] in
                try body(handler.value, socket.value)
            }
        }

        func closesAsked() async throws -> Int { try await onLoop { $1.closesAsked } }
    }

    /// The default ack timeout: the bound on a goaway not written.
    static let grace = UInt64(GatewaySession<DeliveryTicket>.Rules().ackTimeoutMilliseconds)

    static let goaway = GatewayFrame.with {
        $0.goaway = GatewayGoaway.with {
            $0.reconnectAfterMinMilliseconds = 1_000
            $0.reconnectAfterMaxMilliseconds = 10_000
            $0.reason = "draining"
        }
    }

    /// A connection that sent its hello and was welcomed (its presence written).
    static func welcomed() async throws -> Connection {
        let channel = NIOAsyncTestingChannel()
        let metrics = GatewayMetrics()
        let loop = EventLoopConnections(
            eventLoop: channel.testingEventLoop, maximumHandshakes: 8, tick: .milliseconds(250))
        let environment = ConnectionEnvironment(
            rules: .init(), authenticator: Accepting(), metrics: metrics, loops: [loop], name: "test",
            logger: Logger(label: "gateway-drain-test"))
        let (socket, handler) = try await channel.testingEventLoop.executeInContext {
            let socket = Socket()
            let handler = environment.makeConnection(
                channel: channel, arrival: Arrival(accepted: EventLoopConnections.now(), source: "127.0.0.1"))
            try channel.pipeline.syncOperations.addHandlers([socket, handler])
            return (
                NIOLoopBound(socket, eventLoop: channel.testingEventLoop),
                NIOLoopBound(handler, eventLoop: channel.testingEventLoop)
            )
        }
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).get()
        let connection = Connection(channel: channel, socket: socket, handler: handler, metrics: metrics)
        let hello = GatewayFrame.with {
            $0.hello = GatewayHello.with {
                $0.versions = [1]
                $0.clientKey = "hc_test"
                $0.deviceToken = String(repeating: "ab", count: 32)
                $0.environment = "production"
            }
        }
        try await channel.writeInbound(GatewayInbound.frame(hello))
        // The hello is decided on Swift's pool; its verdict comes back to the loop, which claims
        // the device. Then the presence writer's part: the claim's batch is written.
        let deadline = ContinuousClock.now + .seconds(30)
        while environment.directory.count == 0, ContinuousClock.now < deadline {
            await channel.testingEventLoop.run()
            await Task.yield()
        }
        try #require(environment.directory.count == 1)
        let (_, batch) = environment.directory.takeChanges()
        environment.directory.written(batch)
        await channel.testingEventLoop.run()
        try #require(try await connection.onLoop { $1.kinds() } == ["welcome"])
        return connection
    }

    @Test("a drain closes the connection at the first visit once its goaway is written")
    func goawayWritten() async throws {
        let connection = try await Self.welcomed()
        try await connection.onLoop { handler, _ in handler.goaway(Self.goaway) }
        try await connection.onLoop { handler, _ in handler.tick(now: EventLoopConnections.now()) }
        #expect(try await connection.onLoop { $1.kinds() } == ["welcome", "goaway"])
        #expect(!connection.channel.isActive)
        #expect(connection.metrics.closedUnwritten.load(ordering: .relaxed) == 0)
        _ = try? await connection.channel.finish(acceptAlreadyClosed: true)
    }

    @Test("a goaway the client does not take keeps the connection until the ack timeout, then it closes counted once")
    func goawayNotTaken() async throws {
        let connection = try await Self.welcomed()
        let start = EventLoopConnections.now()
        try await connection.onLoop { handler, socket in
            socket.stuck = true
            socket.lingering = true  // the close then waits, as TLS's wait for close_notify does
            handler.goaway(Self.goaway)
        }
        // Nothing awaits an ack, but the goaway waits behind what the client has not read.
        try await connection.onLoop { handler, _ in handler.tick(now: start + Self.grace / 2) }
        #expect(try await connection.closesAsked() == 0)
        try await connection.onLoop { handler, _ in handler.tick(now: start + Self.grace + 1) }
        #expect(try await connection.closesAsked() == 1)
        #expect(connection.metrics.closedUnwritten.load(ordering: .relaxed) == 1)
        // Visits while the close lingers neither close nor count again.
        for late in 2...5 {
            try await connection.onLoop { handler, _ in handler.tick(now: start + UInt64(late) * Self.grace) }
        }
        #expect(try await connection.closesAsked() == 1)
        #expect(connection.metrics.closedUnwritten.load(ordering: .relaxed) == 1)
        try await connection.onLoop { _, socket in socket.lingering = false }
        try await connection.channel.close()
        _ = try? await connection.channel.finish(acceptAlreadyClosed: true)
    }

    @Test("a ping read while the socket takes nothing is not answered; the next one, once it does, is")
    func noPongWhileUnwritable() async throws {
        let connection = try await Self.welcomed()
        let ping = GatewayFrame.with { $0.ping = GatewayPing.with { $0.nonce = 3 } }
        connection.channel.isWritable = false
        connection.channel.pipeline.fireChannelWritabilityChanged()
        try await connection.channel.writeInbound(GatewayInbound.frame(ping))
        #expect(try await connection.onLoop { $1.kinds() } == ["welcome"])
        connection.channel.isWritable = true
        connection.channel.pipeline.fireChannelWritabilityChanged()
        try await connection.channel.writeInbound(GatewayInbound.frame(ping))
        #expect(try await connection.onLoop { $1.kinds() } == ["welcome", "pong"])
        _ = try? await connection.channel.finish(acceptAlreadyClosed: true)
    }
}
