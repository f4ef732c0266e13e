import NIOCore
import NIOPosix
import NIOSSL

/// A listening HTTP/2 server: TLS with ALPN `h2` (or cleartext HTTP/2 with prior knowledge when
/// no TLS context is given), one ``HTTP2ServerConnection`` per accepted socket.
public final class HTTP2Server: Sendable {
    private let channel: any Channel

    /// The address the server listens on (its port is the real one when 0 was asked for).
    public let localAddress: SocketAddress

    private init(channel: any Channel) {
        self.channel = channel
        self.localAddress = channel.localAddress!
    }

    /// The port the server listens on.
    public var port: Int { localAddress.port ?? 0 }

    /// Binds and starts accepting connections.
    ///
    /// - Parameters:
    ///   - host: the address to listen on (`127.0.0.1`, `0.0.0.0`, `::`).
    ///   - port: the port; 0 picks a free one (read it from ``port``).
    ///   - tls: the TLS context; its configuration must list `h2` in `applicationProtocols`
    ///     (``HTTP2TLS/serverConfiguration(certificateChain:privateKey:)`` does). Nil serves
    ///     cleartext HTTP/2 with prior knowledge.
    ///   - settings: what each connection advertises.
    ///   - group: the event loops that run the connections.
    ///   - makeDelegate: called on a new connection's event loop to make its delegate.
    /// - Throws: when the address cannot be bound (in use, not local), with the OS's reason.
    public static func start(
        host: String, port: Int, tls: NIOSSLContext?, settings: HTTP2ServerSettings,
        group: any EventLoopGroup,
        makeDelegate: @escaping @Sendable (HTTP2ServerConnection) -> any HTTP2ServerConnectionDelegate
    ) async throws -> HTTP2Server {
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(.maxMessagesPerRead, value: 16)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    if let tls { try pipeline.addHandler(NIOSSLServerHandler(context: tls)) }
                    let connection = HTTP2ServerConnection(settings: settings)
                    connection.delegate = makeDelegate(connection)
                    try pipeline.addHandler(connection)
                }
            }
        let channel = try await bootstrap.bind(host: host, port: port).get()
        return HTTP2Server(channel: channel)
    }

    /// Stops accepting connections (open ones keep going until their clients close them).
    public func close() async {
        try? await channel.close()
    }
}

/// TLS configurations that negotiate HTTP/2 (ALPN `h2`).
public enum HTTP2TLS {
    /// A server configuration offering `h2` only.
    public static func serverConfiguration(
        certificateChain: [NIOSSLCertificate], privateKey: NIOSSLPrivateKey
    ) -> TLSConfiguration {
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: certificateChain.map { .certificate($0) }, privateKey: .privateKey(privateKey))
        configuration.applicationProtocols = ["h2"]
        configuration.minimumTLSVersion = .tlsv12
        return configuration
    }

    /// A client configuration asking for `h2`, trusting the system roots plus `trustedCertificates`.
    /// `clientCertificate` adds mutual-TLS authentication.
    public static func clientConfiguration(
        trustedCertificates: [NIOSSLCertificate] = [],
        clientCertificate: (chain: [NIOSSLCertificate], key: NIOSSLPrivateKey)? = nil
    ) -> TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.applicationProtocols = ["h2"]
        configuration.minimumTLSVersion = .tlsv12
        if !trustedCertificates.isEmpty {
            configuration.additionalTrustRoots = [.certificates(trustedCertificates)]
        }
        if let clientCertificate {
            configuration.certificateChain = clientCertificate.chain.map { .certificate($0) }
            configuration.privateKey = .privateKey(clientCertificate.key)
        }
        return configuration
    }
}
