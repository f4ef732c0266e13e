import Foundation
import HeraldGatewayProtocol
import NIOCore

#if canImport(Network)
import Network
import NIOTransportServices
#else
import NIOPosix
import NIOSSL
#endif

/// One device's long connection to herald-gateway: the shell around ``GatewayClientSession``.
/// It opens the TLS socket, reads and writes frames, ticks the session once a second, and waits
/// and reconnects as the session says. Pushes and revokes go to the handlers given at start.
///
/// Every piece of state is touched on one event loop (`eventLoop`), which is what makes the class
/// Sendable: each public method hops onto it.
///
/// - Important: call ``start()`` when the app comes to the foreground and ``stop()`` when it
///   leaves; a stopped connection may be started again.
public final class GatewayConnection: @unchecked Sendable {
    /// What the connection tells its owner.
    public struct Handlers: Sendable {
        /// A push arrived (already acknowledged).
        public var push: @Sendable (GatewayPush) -> Void
        /// A revoke arrived.
        public var revoke: @Sendable (Revocation) -> Void
        /// The connection was welcomed (true) or lost (false).
        public var live: @Sendable (Bool) -> Void
        /// The session stopped for good: the error code (`unknown_device`, `replaced`, …) and message.
        public var stopped: @Sendable (String, String) -> Void

        public init(
            push: @escaping @Sendable (GatewayPush) -> Void,
            revoke: @escaping @Sendable (Revocation) -> Void = { _ in },
            live: @escaping @Sendable (Bool) -> Void = { _ in },
            stopped: @escaping @Sendable (String, String) -> Void = { _, _ in }
        ) {
            self.push = push
            self.revoke = revoke
            self.live = live
            self.stopped = stopped
        }
    }

    public let endpoint: GatewayEndpoint
    public let eventLoop: any EventLoop
    private let handlers: Handlers
    private var session: GatewayClientSession
    private var channel: (any Channel)?
    private var ticker: RepeatedTask?
    private var random = SystemRandomNumberGenerator()
    private let tls: GatewayTLS
    private let started = ContinuousClock.now

    /// - Parameters:
    ///   - tls: the TLS set-up to share among many connections to the same endpoint (a simulator
    ///     of thousands of phones); made from `endpoint` when nil.
    ///   - group: the event loops to run on (HeraldKit's shared one by default).
    ///   - acknowledges: false only to simulate a phone that stalls (docs/gateway.md's ack
    ///     timeout then sends its pushes through APNs); an app always acknowledges.
    /// - Throws: when `endpoint`'s trusted certificates are not PEM.
    public init(
        endpoint: GatewayEndpoint, identity: GatewayClientSession.Identity, handlers: Handlers,
        backoff: ReconnectBackoff = ReconnectBackoff(), tls: GatewayTLS? = nil, group: (any EventLoopGroup)? = nil,
        acknowledges: Bool = true
    ) throws {
        self.endpoint = endpoint
        self.handlers = handlers
        session = GatewayClientSession(identity: identity, backoff: backoff)
        session.acknowledgesPushes = acknowledges
        eventLoop = (group ?? GatewayTLS.defaultGroup).next()
        self.tls = try tls ?? GatewayTLS(endpoint: endpoint)
    }

    /// Connects (and keeps reconnecting after losses) until ``stop()``.
    public func start() {
        eventLoop.execute {
            if self.ticker == nil {
                self.ticker = self.eventLoop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) {
                    _ in self.advance { session, now in [session.tick(now: now)] }
                }
            }
            self.advance { session, now in [session.start(now: now)] }
        }
    }

    /// Closes the connection and stops reconnecting.
    public func stop() {
        eventLoop.execute {
            self.advance { session, now in [session.stop(now: now)] }
            self.ticker?.cancel()
            self.ticker = nil
        }
    }

    /// Whether the connection is welcomed now.
    public var isLive: Bool {
        get async { (try? await eventLoop.submit { self.session.isLive }.get()) ?? false }
    }

    private var now: UInt64 {
        let elapsed = ContinuousClock.now - started
        return UInt64(elapsed.components.seconds) * 1000
            + UInt64(elapsed.components.attoseconds / 1_000_000_000_000_000)
    }

    private func perform(_ action: GatewayClientSession.Action) {
        eventLoop.preconditionInEventLoop()
        switch action {
        case .nothing:
            break
        case .connect:
            connect()
        case .send(let frame):
            channel?.writeAndFlush(frame, promise: nil)
        case .received(let push):
            handlers.push(push)
        case .revoke(let revocation):
            handlers.revoke(revocation)
        case .close:
            channel?.close(promise: nil)
        case .reconnect:
            break  // the session's tick connects when the wait is over
        case .stop(let code, let message):
            ticker?.cancel()
            ticker = nil
            handlers.stopped(code, message)
        }
    }

    private func connect() {
        let opening = tls.bootstrap(eventLoop: eventLoop, endpoint: endpoint) { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandlers([
                    ByteToMessageHandler(GatewayFrameReader(maximumFrameBytes: FrameLength.defaultMaximum)),
                    MessageToByteHandler(GatewayFrameWriter()),
                    Inbound(connection: self),
                ])
            }
        }
        opening.whenComplete { result in
            switch result {
            case .success(let channel):
                self.channel = channel
                self.advance { session, now in [session.opened(now: now)] }
            case .failure:
                self.advance { session, now in [session.closed(now: now, random: &self.random)] }
            }
        }
    }

    fileprivate func frameArrived(_ frame: GatewayFrame) {
        advance { session, now in session.received(frame, now: now) }
    }

    fileprivate func channelClosed(_ closed: any Channel) {
        guard channel === closed else { return }
        channel = nil
        advance { session, now in [session.closed(now: now, random: &self.random)] }
    }

    /// Feeds the session one event and does what it says; tells the owner when the connection
    /// became live or stopped being live, whichever side decided it.
    private func advance(_ event: (inout GatewayClientSession, UInt64) -> [GatewayClientSession.Action]) {
        eventLoop.preconditionInEventLoop()
        let wasLive = session.isLive
        let actions = event(&session, now)
        let isLive = session.isLive
        if wasLive != isLive { handlers.live(isLive) }
        for action in actions { perform(action) }
    }

    private final class Inbound: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = GatewayFrame
        let connection: GatewayConnection

        init(connection: GatewayConnection) {
            self.connection = connection
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            connection.frameArrived(unwrapInboundIn(data))
        }

        func channelInactive(context: ChannelHandlerContext) {
            connection.channelClosed(context.channel)
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }
    }
}

#if canImport(Network)
/// How connections to the gateway open and secure their sockets. Apple platforms:
/// Network.framework's TLS through NIOTransportServices (not compiled by this repository's
/// tests, which run on Linux). One serves many connections.
public final class GatewayTLS: Sendable {
    let options: NWProtocolTLS.Options

    /// - Throws: never on Apple platforms (the system's roots are used).
    public init(endpoint: GatewayEndpoint) throws {
        options = NWProtocolTLS.Options()
        sec_protocol_options_set_min_tls_protocol_version(options.securityProtocolOptions, .TLSv12)
        // The system's roots only: `trustedCertificatesPEM` is a Linux (development) option;
        // on a simulator, trust a development CA through the simulator's keychain (docs/sdk.md).
    }

    func bootstrap(
        eventLoop: any EventLoop, endpoint: GatewayEndpoint,
        initializer: @escaping @Sendable (any Channel) -> EventLoopFuture<Void>
    ) -> EventLoopFuture<any Channel> {
        NIOTSConnectionBootstrap(group: eventLoop)
            .tlsOptions(options)
            .channelInitializer(initializer)
            .connect(host: endpoint.host, port: endpoint.port)
    }

    /// The event loops every connection of the process shares.
    static let defaultGroup: any EventLoopGroup = NIOTSEventLoopGroup.singleton
}
#else
/// How connections to the gateway open and secure their sockets. Linux: BoringSSL through
/// NIOSSL on NIOPosix's event loops; the context (the trusted roots, loaded once) is shared by
/// every connection made with this object.
public final class GatewayTLS: Sendable {
    let context: NIOSSLContext
    let serverName: String

    /// - Throws: when `endpoint`'s trusted certificates are not PEM.
    public init(endpoint: GatewayEndpoint) throws {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv12
        if let pem = endpoint.trustedCertificatesPEM {
            configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8)))
        }
        context = try NIOSSLContext(configuration: configuration)
        serverName = endpoint.serverName ?? endpoint.host
    }

    func bootstrap(
        eventLoop: any EventLoop, endpoint: GatewayEndpoint,
        initializer: @escaping @Sendable (any Channel) -> EventLoopFuture<Void>
    ) -> EventLoopFuture<any Channel> {
        let context = context
        let name = serverName
        return ClientBootstrap(group: eventLoop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let hostname = name.first?.isNumber == true ? nil : name
                    try channel.pipeline.syncOperations.addHandler(
                        NIOSSLClientHandler(context: context, serverHostname: hostname))
                }.flatMap { initializer(channel) }
            }
            .connect(host: endpoint.host, port: endpoint.port)
    }

    /// The event loops every connection of the process shares.
    static let defaultGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
}
#endif
