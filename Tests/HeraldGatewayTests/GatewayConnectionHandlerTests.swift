import Foundation
import HeraldAccess
import HeraldCore
import HeraldGatewayProtocol
import HeraldStore
import Logging
import NIOCore
import NIOEmbedded
import Testing

@testable import HeraldGateway

/// A connection whose client reads nothing: the handler stops reading it while it cannot be
/// written, and closes it without waiting for ever on an error frame that cannot go out.
@Suite("gateway connection: a client that reads nothing")
struct GatewayConnectionHandlerTests {
    /// Sits below the connection as the socket would: counts the reads asked for, and holds every
    /// write unfinished (the peer takes nothing) until the channel closes — unless `takes`.
    final class StuckSocket: ChannelOutboundHandler {
        typealias OutboundIn = GatewayFrame
        var reads = 0
        var takes = false
        var held: [EventLoopPromise<Void>] = []

        func read(context: ChannelHandlerContext) {
            reads += 1
            context.read()
        }

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            guard let promise else { return }
            if takes { promise.succeed() } else { held.append(promise) }
        }

        func flush(context: ChannelHandlerContext) {}

        func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
            for promise in held { promise.fail(ChannelError.ioOnClosedChannel) }
            held = []
            context.close(mode: mode, promise: promise)
        }
    }

    struct Connection {
        let channel: EmbeddedChannel
        let socket: StuckSocket
        let handler: GatewayConnectionHandler
        let metrics: GatewayMetrics
    }

    /// The default ack timeout: the bound on an unwritable socket and on a close's last frame.
    static let grace = UInt64(GatewaySession<DeliveryTicket>.Rules().ackTimeoutMilliseconds)

    /// A connection accepted now on an embedded channel. Its authenticator's database is never
    /// run: nothing here sends a hello.
    static func connection(writable: Bool = true) throws -> Connection {
        let logger = Logger(label: "gateway-connection-test")
        let database = try HeraldDatabase.makeClient(
            settings: PostgresSettings(host: "127.0.0.1", port: 1, user: "nobody", password: "", database: "none"),
            logger: logger)
        let metrics = GatewayMetrics()
        let authenticator = GatewayAuthenticator(
            keys: KeyAuthenticator(
                keys: APIKeyRepository(client: database, logger: logger), cacheTTL: .seconds(1),
                counters: metrics.access),
            devices: DeviceRepository(client: database, logger: logger),
            apps: AppRepository(client: database, logger: logger),
            identitySecrets: IdentitySecretRepository(client: database, logger: logger),
            cipher: try CredentialCipher(masterKeyBase64: Data(repeating: 7, count: 32).base64EncodedString()),
            failures: FailedAuthenticationThrottle(limit: 20, counters: metrics.access), logger: logger)
        let channel = EmbeddedChannel()
        let loop = EventLoopConnections(
            eventLoop: channel.embeddedEventLoop, maximumHandshakes: 8, tick: .milliseconds(250))
        let environment = ConnectionEnvironment(
            rules: .init(), authenticator: authenticator, metrics: metrics, loops: [loop], name: "test",
            logger: logger)
        let socket = StuckSocket()
        channel.isWritable = writable
        let handler = environment.makeConnection(
            channel: channel, arrival: Arrival(accepted: EventLoopConnections.now(), source: "127.0.0.1"))
        try channel.pipeline.syncOperations.addHandlers([socket, handler])
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        return Connection(channel: channel, socket: socket, handler: handler, metrics: metrics)
    }

    @Test("no read is passed on while the socket is unwritable; the one asked for meanwhile follows when it is")
    func notReadWhileUnwritable() throws {
        let connection = try Self.connection()
        let channel = connection.channel
        let before = connection.socket.reads
        channel.read()
        #expect(connection.socket.reads == before + 1)
        channel.isWritable = false
        channel.pipeline.fireChannelWritabilityChanged()
        channel.read()
        channel.read()
        #expect(connection.socket.reads == before + 1)
        channel.isWritable = true
        channel.pipeline.fireChannelWritabilityChanged()
        #expect(connection.socket.reads == before + 2)
        channel.read()
        #expect(connection.socket.reads == before + 3)
        _ = try? channel.finish()
    }

    @Test("a close whose error frame is not written closes the socket after the ack timeout, not never")
    func closeNotWaitingForEver() throws {
        let connection = try Self.connection()
        let start = EventLoopConnections.now()
        connection.handler.replace()
        #expect(connection.socket.held.count == 1)  // the `replaced` error frame, never taken
        connection.handler.tick(now: start + Self.grace / 2)
        #expect(connection.channel.isActive)
        connection.handler.tick(now: EventLoopConnections.now() + Self.grace)
        #expect(!connection.channel.isActive)
        #expect(connection.metrics.closedUnwritten.load(ordering: .relaxed) == 1)
        // Visits after the forced close change nothing.
        connection.handler.tick(now: EventLoopConnections.now() + 2 * Self.grace)
        #expect(connection.metrics.closedUnwritten.load(ordering: .relaxed) == 1)
        _ = try? connection.channel.finish()
    }

    @Test("a connection unwritable from its start is not read, and is closed slow_reader at the ack timeout")
    func unwritableFromTheStart() throws {
        let connection = try Self.connection(writable: false)
        let start = EventLoopConnections.now()
        let before = connection.socket.reads
        connection.channel.read()
        #expect(connection.socket.reads == before)
        connection.handler.tick(now: start + Self.grace / 2)
        #expect(connection.socket.held.isEmpty)
        connection.handler.tick(now: EventLoopConnections.now() + Self.grace)
        #expect(connection.socket.held.count == 1)  // the slow_reader error frame
        #expect(connection.metrics.errorCount(.slowReader) == 1)
        _ = try? connection.channel.finish()
    }

    @Test("a second close writes no second frame and does not move the bound")
    func secondClose() throws {
        let connection = try Self.connection()
        let start = EventLoopConnections.now()
        connection.handler.replace()
        connection.handler.replace()  // the device came back again while the first close waits
        #expect(connection.socket.held.count == 1)
        #expect(connection.metrics.replaced.load(ordering: .relaxed) == 1)
        // The bound counts from the first close: a visit past it closes.
        connection.handler.tick(now: start + Self.grace + 500)
        #expect(!connection.channel.isActive)
        #expect(connection.metrics.closedUnwritten.load(ordering: .relaxed) == 1)
        _ = try? connection.channel.finish()
    }

    @Test("a close whose frame was written is not counted unwritten")
    func writtenClose() throws {
        let connection = try Self.connection()
        connection.socket.takes = true
        connection.handler.replace()
        #expect(!connection.channel.isActive)  // written, then closed
        connection.handler.tick(now: EventLoopConnections.now() + Self.grace)
        #expect(connection.metrics.closedUnwritten.load(ordering: .relaxed) == 0)
        _ = try? connection.channel.finish()
    }
}
