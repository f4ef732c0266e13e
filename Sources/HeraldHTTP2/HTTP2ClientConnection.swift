import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// One client HTTP/2 connection (TLS with ALPN `h2`, or cleartext with prior knowledge), on
/// which many requests run at once, each awaited with `async`/`await`.
///
/// The connection does not queue on its own behalf: callers keep at most
/// ``maxConcurrentStreams`` requests open (a request submitted over the limit waits inside
/// nghttp2 until a stream frees up). After a GOAWAY ``isAcceptingRequests`` turns false and new
/// requests fail at once with ``HTTP2Error/Kind/goAway(_:)``, marked as not processed.
///
/// - Important: call ``close()`` when done; the connection also ends when the server closes it.
public final class HTTP2ClientConnection: Sendable {
    private let channel: any Channel
    private let handler: NIOLoopBound<HTTP2ClientHandler>
    private let shared: HTTP2ClientSharedState
    /// `host:port` as sent in `:authority`.
    public let authority: String

    private init(
        channel: any Channel, handler: NIOLoopBound<HTTP2ClientHandler>, shared: HTTP2ClientSharedState,
        authority: String
    ) {
        self.channel = channel
        self.handler = handler
        self.shared = shared
        self.authority = authority
    }

    /// Connects, completes the TLS handshake (which must select `h2`) and waits for the
    /// server's first SETTINGS frame, so ``maxConcurrentStreams`` is the server's own figure.
    ///
    /// - Parameters:
    ///   - host: the server's name or address.
    ///   - port: the server's port.
    ///   - tls: a client TLS context whose configuration lists `h2` (see
    ///     ``HTTP2TLS/clientConfiguration(trustedCertificates:clientCertificate:)``); nil for
    ///     cleartext HTTP/2 with prior knowledge.
    ///   - serverHostname: the name checked against the certificate and sent as SNI
    ///     (defaults to `host` when it is not an IP address).
    ///   - group: the event loops to run on.
    ///   - timeout: for the TCP connect, the TLS handshake and the first SETTINGS together.
    /// - Throws: the socket's error (refused, unreachable), a TLS error (untrusted
    ///   certificate), or ``HTTP2Error`` (`http2NotNegotiated`, `connectionClosed`,
    ///   `deadlineExceeded`).
    public static func connect(
        host: String, port: Int, tls: NIOSSLContext?, serverHostname: String? = nil,
        group: any EventLoopGroup, timeout: TimeAmount = .seconds(10)
    ) async throws -> HTTP2ClientConnection {
        let shared = HTTP2ClientSharedState()
        let hostname = serverHostname ?? (host.first?.isNumber == true || host.contains(":") ? nil : host)
        let bootstrap = ClientBootstrap(group: group)
            .connectTimeout(timeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    if let tls { try pipeline.addHandler(NIOSSLClientHandler(context: tls, serverHostname: hostname)) }
                    let ready = channel.eventLoop.makePromise(of: Void.self)
                    try pipeline.addHandler(HTTP2ClientHandler(shared: shared, usesTLS: tls != nil, ready: ready))
                }
            }
        let channel = try await bootstrap.connect(host: host, port: port).get()
        let handler: NIOLoopBound<HTTP2ClientHandler>
        do {
            handler = try await channel.eventLoop.flatSubmit {
                do {
                    let handler = try channel.pipeline.syncOperations.handler(type: HTTP2ClientHandler.self)
                    let bound = NIOLoopBound(handler, eventLoop: channel.eventLoop)
                    let timer = channel.eventLoop.scheduleTask(in: timeout) {
                        bound.value.ready.fail(HTTP2Error(.deadlineExceeded, requestWasNotProcessed: true))
                    }
                    return handler.ready.futureResult.map {
                        timer.cancel()
                        return bound
                    }
                } catch {
                    return channel.eventLoop.makeFailedFuture(error)
                }
            }.get()
        } catch {
            try? await channel.close()
            throw error
        }
        let authority = port == 443 ? host : "\(host):\(port)"
        return HTTP2ClientConnection(channel: channel, handler: handler, shared: shared, authority: authority)
    }

    /// The event loop the connection runs on (where ``submit(_:timeout:compose:onResponse:)``
    /// calls its closures).
    public var eventLoop: any EventLoop { channel.eventLoop }

    /// The server's current SETTINGS_MAX_CONCURRENT_STREAMS.
    public var maxConcurrentStreams: Int { shared.maxConcurrentStreams.load(ordering: .relaxed) }

    /// Requests sent and not yet answered.
    public var openStreams: Int { shared.openStreams.load(ordering: .relaxed) }

    /// False once the server sent GOAWAY or the connection closed.
    public var isAcceptingRequests: Bool { shared.acceptingRequests.load(ordering: .relaxed) }

    /// The GOAWAY the server sent, if any.
    public var goAway: HTTP2GoAway? { shared.goAway.withLock { $0 } }

    /// Settings changes, GOAWAY and closing, as they happen (the newest 64 are kept for a slow
    /// reader). Finishes when the connection closes. Read it from one task.
    public var events: AsyncStream<HTTP2ConnectionEvent> { shared.events }

    /// Sends `request` and waits for the whole response.
    ///
    /// - Parameter timeout: the request's deadline, counted from now; when it passes, the
    ///   stream is reset (CANCEL) and the call throws `deadlineExceeded`. Resolution: about
    ///   20 ms.
    /// - Throws: ``HTTP2Error``: `streamReset`, `goAway` (with `requestWasNotProcessed` when
    ///   the server never saw it), `deadlineExceeded`, `connectionClosed`, `cancelled`.
    public func send(_ request: HTTP2Request, timeout: TimeAmount) async throws -> HTTP2Response {
        try await send(timeout: timeout) { block in
            request.write(into: &block)
            return request.body
        }
    }

    /// Sends the request `compose` writes and waits for the whole response: `compose` is called
    /// once, on the connection's event loop, with an empty header block to write the request's
    /// fields into (pseudo-headers first, see ``HTTP2HeaderBlock/addRequestPseudoHeaders(method:scheme:authority:pathPrefix:path:pathNeverIndexed:)``),
    /// and returns the body. Otherwise as ``send(_:timeout:)``.
    public func send(
        timeout: TimeAmount, compose: @escaping @Sendable (inout HTTP2HeaderBlock) -> ByteBuffer?
    ) async throws -> HTTP2Response {
        let pending = PendingHTTP2Request(deadline: .now() + timeout)
        let handler = self.handler
        let eventLoop = channel.eventLoop
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                pending.continuation = continuation
                eventLoop.execute { handler.value.submit(pending, compose: compose) }
            }
        } onCancel: {
            eventLoop.execute { handler.value.cancel(pending) }
        }
    }

    /// Sends one request per tag without waiting for their responses: `compose` writes each
    /// request (its header block, and the body it returns) when it is submitted, and
    /// `onResponse` is called once for each, with its tag, when the response is complete or the
    /// request failed. Both run on the connection's event loop (so they must not block). Called
    /// on that event loop, the requests are submitted at once — a handler can send the next
    /// request without a thread hop.
    ///
    /// This is the path for many requests at a time: no task, continuation or hop per request,
    /// and no String or header array made per request — `compose` writes straight into storage
    /// the connection reuses. As with ``send(_:timeout:)``, the caller keeps within
    /// ``maxConcurrentStreams``.
    ///
    /// - Parameters:
    ///   - tags: one per request, of the caller's choosing.
    ///   - timeout: each request's deadline, counted from now.
    ///   - compose: writes the request for a tag into an empty header block and returns its body.
    ///   - onResponse: the response, or the ``HTTP2Error`` (as with `send`) of each request.
    public func submit(
        _ tags: [Int], timeout: TimeAmount, compose: @escaping @Sendable (Int, inout HTTP2HeaderBlock) -> ByteBuffer?,
        onResponse: @escaping HTTP2ResponseHandler
    ) {
        let deadline = NIODeadline.now() + timeout
        let handler = self.handler
        let eventLoop = channel.eventLoop
        if eventLoop.inEventLoop {
            handler.value.submit(tags, deadline: deadline, compose: compose, onResponse: onResponse)
        } else {
            eventLoop.execute {
                handler.value.submit(tags, deadline: deadline, compose: compose, onResponse: onResponse)
            }
        }
    }

    /// Sends PING and waits for its acknowledgement.
    /// - Returns: the round-trip time.
    public func ping() async throws -> Duration {
        let handler = self.handler
        let promise = channel.eventLoop.makePromise(of: Duration.self)
        channel.eventLoop.execute { handler.value.ping(promise: promise) }
        return try await promise.futureResult.get()
    }

    /// Sends GOAWAY and closes the connection; requests still open fail with `connectionClosed`.
    public func close() async {
        let handler = self.handler
        channel.eventLoop.execute { handler.value.close() }
        try? await channel.closeFuture.get()
    }

    /// Completes when the connection is closed, by either side.
    public func waitUntilClosed() async {
        try? await channel.closeFuture.get()
    }
}
