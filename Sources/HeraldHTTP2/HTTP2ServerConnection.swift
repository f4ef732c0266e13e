import NIOCore
import NIOSSL
import NIOTLS

/// A complete request received by an ``HTTP2ServerConnection``.
public struct HTTP2ServerRequest {
    public let streamID: Int32
    /// Every header field, pseudo-headers (`:method`, `:path`, …) included, in arrival order.
    public internal(set) var headers: HTTP2HeaderFields
    /// The body, up to the connection's body limit.
    public let body: ByteBuffer
    /// How many body bytes the client sent, including those past the limit (not kept).
    public let bodyLength: Int
}

/// Handles the requests of one server connection. Every method is called on the connection's
/// event loop; the delegate may answer at once or later (from that event loop).
public protocol HTTP2ServerConnectionDelegate: AnyObject {
    /// A request's headers and body have all arrived. Answer with
    /// ``HTTP2ServerConnection/respond(streamID:status:headers:body:)`` — or don't, and the
    /// stream stays open until the client gives up.
    func connection(_ connection: HTTP2ServerConnection, didReceive request: HTTP2ServerRequest)
    /// The connection is closed; called once.
    func connectionDidClose(_ connection: HTTP2ServerConnection)
}

/// Settings a server connection starts with.
public struct HTTP2ServerSettings: Sendable {
    /// SETTINGS_MAX_CONCURRENT_STREAMS advertised at the start; nghttp2 refuses streams over it
    /// with RST_STREAM REFUSED_STREAM. Change it later with
    /// ``HTTP2ServerConnection/setMaxConcurrentStreams(_:)``.
    public var maxConcurrentStreams: UInt32
    /// SETTINGS_INITIAL_WINDOW_SIZE for request bodies.
    public var initialWindowSize: UInt32
    /// Request body bytes kept per stream; more are counted in `bodyLength` but dropped.
    public var maxRequestBodyBytes: Int

    public init(
        maxConcurrentStreams: UInt32 = 1000, initialWindowSize: UInt32 = 65_535, maxRequestBodyBytes: Int = 1 << 20
    ) {
        self.maxConcurrentStreams = maxConcurrentStreams
        self.initialWindowSize = initialWindowSize
        self.maxRequestBodyBytes = maxRequestBodyBytes
    }
}

/// One server-side HTTP/2 connection: a channel handler that drives an nghttp2 server session
/// with the bytes of a (TLS) socket and hands complete requests to its delegate.
///
/// Everything here runs on the channel's event loop; the methods a delegate calls must be called
/// there too.
public final class HTTP2ServerConnection: ChannelInboundHandler {
    public typealias InboundIn = ByteBuffer
    public typealias OutboundOut = ByteBuffer

    /// A request being received, then answered. A class, reused once its stream closes: the
    /// body's bytes are counted into it by reference (a dictionary value mutated in place went
    /// through an accessor that allocated for each DATA frame).
    fileprivate final class IncomingStream {
        var headers = HTTP2HeaderFields()
        var body: ByteBuffer?
        var bodyLength = 0
        /// Handed to the delegate; waiting for its answer (or a reset) to close.
        var delivered = false

        func reset() {
            headers.removeAll()
            body = nil
            bodyLength = 0
            delivered = false
        }
    }

    /// The delegate, set before the connection is added to a pipeline. The connection owns it.
    public var delegate: (any HTTP2ServerConnectionDelegate)?
    public let settings: HTTP2ServerSettings

    private var session: NGHTTP2Session?
    private var context: ChannelHandlerContext?
    private var streams = HTTP2StreamTable<IncomingStream>()
    /// The header block being received: HEADERS and its CONTINUATIONs arrive back to back for
    /// one stream, so fields collect here and reach `streams` once per block, not per field.
    private var receivingHeadersOf: Int32 = 0
    private var receivingHeaders = HTTP2HeaderFields()
    /// Header storage handed back after a request was delivered, reused for the next ones (a
    /// delegate that kept a copy keeps it intact: the storage is copied on write).
    private var spareHeaders: [HTTP2HeaderFields] = []
    /// Streams closed, kept for the next requests (at most 1,024).
    private var spareStreams: [IncomingStream] = []
    /// Each response's header block is written here (the storage is kept between responses).
    private var responseHeaders = HTTP2HeaderBlock()
    private var isReading = false
    private var flushScheduled = false
    private var closeWhenIdle = false
    private var closed = false
    /// The stream limit currently advertised.
    public private(set) var maxConcurrentStreams: UInt32

    public init(settings: HTTP2ServerSettings) {
        self.settings = settings
        self.maxConcurrentStreams = settings.maxConcurrentStreams
    }

    /// The connection's event loop (valid once the connection is in a pipeline).
    public var eventLoop: any EventLoop { context!.eventLoop }

    /// The client's address, if known.
    public var remoteAddress: SocketAddress? { context?.channel.remoteAddress }

    /// The client's TLS certificate, when it presented one (mutual TLS).
    public var peerCertificate: NIOSSLCertificate? {
        guard let context, let tls = try? context.pipeline.syncOperations.handler(type: NIOSSLServerHandler.self) else {
            return nil
        }
        return tls.peerCertificate
    }

    /// Streams open on this connection (received, not yet closed).
    public var openStreamCount: Int { streams.count }

    // MARK: Answering

    /// Sends a response on `streamID`.
    /// - Returns: false when the stream is gone (the client reset it or the connection closed).
    @discardableResult
    public func respond(streamID: Int32, status: Int, headers: [HTTP2HeaderField] = [], body: ByteBuffer? = nil) -> Bool
    {
        respond(streamID: streamID, status: status, body: body) { $0.add(contentsOf: headers) }
    }

    /// Sends a response on `streamID` whose header fields after `:status` `writeHeaders` writes
    /// into the connection's reused header block (no array of fields per response).
    /// - Returns: false when the stream is gone (the client reset it or the connection closed).
    @discardableResult
    public func respond(
        streamID: Int32, status: Int, body: ByteBuffer? = nil, writeHeaders: (inout HTTP2HeaderBlock) -> Void
    ) -> Bool {
        guard let session, !closed else { return false }
        do {
            responseHeaders.removeAll()
            responseHeaders.add(":status", String(status))
            writeHeaders(&responseHeaders)
            try session.submitResponse(streamID: streamID, responseHeaders, body: body)
        } catch {
            return false
        }
        scheduleFlush()
        return true
    }

    /// Resets one stream with `errorCode`.
    public func resetStream(streamID: Int32, errorCode: HTTP2ErrorCode) {
        guard let session, !closed else { return }
        session.submitResetStream(streamID: streamID, errorCode: errorCode.rawValue)
        scheduleFlush()
    }

    /// Advertises a new SETTINGS_MAX_CONCURRENT_STREAMS; streams over it are refused from now on.
    public func setMaxConcurrentStreams(_ limit: UInt32) {
        guard let session, !closed, limit != maxConcurrentStreams else { return }
        maxConcurrentStreams = limit
        try? session.submitSettings([(NGHTTP2SettingsIdentifier.maxConcurrentStreams, limit)])
        scheduleFlush()
    }

    /// Sends GOAWAY naming `lastStreamID` (default: the last stream handed to the delegate),
    /// then closes the connection once the streams at or below it are answered. Streams above it
    /// that already arrived are reset with REFUSED_STREAM: the client may send them elsewhere.
    /// When `lastStreamID`'s own response is still being sent, GOAWAY waits for it, so the
    /// client sees the whole answer first (some clients drop DATA that follows a GOAWAY).
    public func goAway(errorCode: HTTP2ErrorCode = .noError, debugData: [UInt8] = [], lastStreamID: Int32? = nil) {
        guard let session, !closed, pendingGoAway == nil, !closeWhenIdle else { return }
        let last = lastStreamID ?? session.lastProcessedStreamID
        for (streamID, _) in streams where streamID > last {
            session.submitResetStream(streamID: streamID, errorCode: HTTP2ErrorCode.refusedStream.rawValue)
            streams[streamID] = nil
        }
        pendingGoAway = (last, errorCode, debugData)
        if streams[last] == nil { sendPendingGoAway() }
        scheduleFlush()
    }

    private var pendingGoAway: (lastStreamID: Int32, errorCode: HTTP2ErrorCode, debugData: [UInt8])?

    private func sendPendingGoAway() {
        guard let session, let goAway = pendingGoAway else { return }
        pendingGoAway = nil
        session.submitGoAway(
            lastStreamID: goAway.lastStreamID, errorCode: goAway.errorCode.rawValue, debugData: goAway.debugData)
        closeWhenIdle = true
        scheduleFlush()
    }

    /// Closes the connection at once, without GOAWAY (as a dropped connection looks).
    public func close() {
        guard let context, !closed else { return }
        context.close(promise: nil)
    }

    /// The highest stream id handed to the delegate so far.
    public var lastProcessedStreamID: Int32 { session?.lastProcessedStreamID ?? 0 }

    // MARK: Channel events

    public func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { start(context: context) }
    }

    public func channelActive(context: ChannelHandlerContext) {
        start(context: context)
        context.fireChannelActive()
    }

    private func start(context: ChannelHandlerContext) {
        guard session == nil else { return }
        do {
            let session = try NGHTTP2Session(server: self)
            try session.submitSettings([
                (NGHTTP2SettingsIdentifier.maxConcurrentStreams, settings.maxConcurrentStreams),
                (NGHTTP2SettingsIdentifier.initialWindowSize, settings.initialWindowSize),
            ])
            self.session = session
            flush()
        } catch {
            context.close(promise: nil)
        }
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let session else { return }
        let bytes = unwrapInboundIn(data)
        isReading = true
        defer { isReading = false }
        do {
            try session.receive(bytes)
        } catch {
            // nghttp2 queued a GOAWAY naming the protocol error: send it, then hang up.
            flush()
            context.close(promise: nil)
        }
    }

    public func channelReadComplete(context: ChannelHandlerContext) {
        flush()
        context.fireChannelReadComplete()
    }

    public func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSUserEvent, case .handshakeCompleted(let negotiated) = event, negotiated != "h2" {
            // APNs speaks HTTP/2 only; a client that did not offer h2 cannot be served.
            context.close(promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }

    public func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    public func channelInactive(context: ChannelHandlerContext) {
        if !closed {
            closed = true
            streams.removeAll()
            delegate?.connectionDidClose(self)
            delegate = nil
        }
        context.fireChannelInactive()
    }

    // MARK: Output

    private func scheduleFlush() {
        guard !isReading, !flushScheduled, let context else { return }
        flushScheduled = true
        context.eventLoop.assumeIsolated().execute {
            self.flushScheduled = false
            self.flush()
        }
    }

    private func flush() {
        guard let context, let session, !closed else { return }
        if session.flush(to: context), closeWhenIdle, streams.isEmpty { context.close(promise: nil) }
    }

}

extension HTTP2ServerConnection: HTTP2SessionDelegate {
    func sessionBeganHeaders(streamID: Int32) {
        receivingHeadersOf = streamID
        receivingHeaders = spareHeaders.popLast() ?? HTTP2HeaderFields()
    }

    func sessionReceivedHeader(streamID: Int32, name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        if streamID == receivingHeadersOf { receivingHeaders.append(name: name, value: value) }
    }

    /// Files the header block just received under its stream (trailers are dropped: APNs
    /// requests have none).
    private func finishHeaderBlock(_ streamID: Int32) {
        guard streamID == receivingHeadersOf else { return }
        receivingHeadersOf = 0
        if streams[streamID] == nil {
            let stream = spareStreams.popLast() ?? IncomingStream()
            swap(&stream.headers, &receivingHeaders)
            streams[streamID] = stream
        }
    }

    func sessionReceivedData(streamID: Int32, bytes: UnsafeRawBufferPointer) {
        guard let context else { return }
        let limit = settings.maxRequestBodyBytes
        let allocator = context.channel.allocator
        streams[streamID]?.appendBody(bytes, limit: limit, allocator: allocator)
    }

    func sessionReceivedFrame(_ frame: HTTP2ReceivedFrame) {
        switch frame {
        case .headers(let streamID, false):
            finishHeaderBlock(streamID)
        case .headers(let streamID, true), .data(let streamID, true):
            if case .headers = frame { finishHeaderBlock(streamID) }
            if let pendingGoAway, streamID > pendingGoAway.lastStreamID {
                streams[streamID] = nil
                session?.submitResetStream(streamID: streamID, errorCode: HTTP2ErrorCode.refusedStream.rawValue)
                return
            }
            guard let stream = streams[streamID], !stream.delivered else { return }
            stream.delivered = true
            // The header storage moves to the request (not shared with the stream), so once the
            // delegate is done with it, it is this connection's alone again and is reused.
            var request = HTTP2ServerRequest(
                streamID: streamID, headers: HTTP2HeaderFields(), body: stream.body ?? ByteBuffer(),
                bodyLength: stream.bodyLength)
            swap(&request.headers, &stream.headers)
            stream.body = nil
            delegate?.connection(self, didReceive: request)
            if spareHeaders.count < 64 {
                request.headers.removeAll()
                spareHeaders.append(request.headers)
            }
        default:
            break
        }
    }

    func sessionClosedStream(streamID: Int32, errorCode: UInt32) {
        if let stream = streams.removeValue(forKey: streamID), spareStreams.count < 1024 {
            stream.reset()
            spareStreams.append(stream)
        }
        if let pendingGoAway, pendingGoAway.lastStreamID == streamID { sendPendingGoAway() }
    }
}

extension HTTP2ServerConnection.IncomingStream {
    fileprivate func appendBody(_ bytes: UnsafeRawBufferPointer, limit: Int, allocator: ByteBufferAllocator) {
        bodyLength += bytes.count
        let room = limit - (body?.readableBytes ?? 0)
        guard room > 0 else { return }
        if body == nil { body = allocator.buffer(capacity: min(limit, max(bytes.count, 1024))) }
        body!.writeBytes(UnsafeRawBufferPointer(rebasing: bytes.prefix(room)))
    }
}
