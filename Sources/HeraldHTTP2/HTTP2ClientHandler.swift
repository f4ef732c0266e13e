import NIOCore
import NIOSSL
import NIOTLS
import Synchronization

/// A request on its way: created by the caller's task, then owned by the connection's event
/// loop. After `HTTP2ClientConnection.send` hands it over (through `EventLoop.execute`, which
/// orders the hand-over), only the event loop touches its fields.
///
/// One submitted with a tag and a handler (``HTTP2ClientConnection/submit(_:timeout:compose:onResponse:)``)
/// is made on the event loop and known only to the connection, which reuses it for a later
/// request once its handler has been told (``reusable``).
final class PendingHTTP2Request: @unchecked Sendable {
    /// Who is told of the response: a waiting task, or a handler called on the event loop with
    /// the request's tag.
    var continuation: CheckedContinuation<HTTP2Response, any Error>?
    var handler: HTTP2ResponseHandler?
    var tag = 0
    /// Made by the connection for a tagged request, so no one else holds it once it is finished.
    var reusable = false
    var deadline: NIODeadline
    var streamID: Int32 = 0
    var status = 0
    var headers = HTTP2HeaderFields()
    var body: ByteBuffer?
    var cancelled = false

    init(deadline: NIODeadline) {
        self.deadline = deadline
    }

    /// Empties a finished request for reuse. A response's header storage went on with it; a
    /// request that failed part-way may still hold the fields it received, emptied here.
    func reset() {
        streamID = 0
        status = 0
        headers.removeAll()
        body = nil
        cancelled = false
    }

    func finish(_ result: Result<HTTP2Response, any Error>) {
        if let continuation {
            continuation.resume(with: result)
            self.continuation = nil
        } else if let handler {
            self.handler = nil
            handler(tag, result)
        }
    }
}

/// What a connection shares with the tasks that use it: lock-free readings of its state, and
/// its event stream.
final class HTTP2ClientSharedState: Sendable {
    let maxConcurrentStreams = Atomic<Int>(0)
    let openStreams = Atomic<Int>(0)
    let acceptingRequests = Atomic<Bool>(true)
    let goAway = Mutex<HTTP2GoAway?>(nil)
    let events: AsyncStream<HTTP2ConnectionEvent>
    let eventsContinuation: AsyncStream<HTTP2ConnectionEvent>.Continuation

    init() {
        (events, eventsContinuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(64))
    }
}

/// The channel handler behind an ``HTTP2ClientConnection``: drives an ``HTTP2ClientSession``,
/// matches responses to pending requests, enforces deadlines and surfaces SETTINGS and GOAWAY.
final class HTTP2ClientHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let shared: HTTP2ClientSharedState
    private let usesTLS: Bool
    private var session: HTTP2ClientSession<HTTP2ClientHandler>?
    private var context: ChannelHandlerContext?
    private var streams = HTTP2StreamTable<PendingHTTP2Request>()
    /// The request whose response header block is being read (its fields arrive one callback
    /// each, and a header block is never interleaved with another stream's): looked up once
    /// per block, not once per field.
    private var receivingHeaders: PendingHTTP2Request?
    /// Finished tagged requests, kept for the next ones (at most ``maximumSpareRequests``).
    private var spareRequests: [PendingHTTP2Request] = []
    private static let maximumSpareRequests = 1024
    /// Each request's header block is written here (the storage is kept between requests).
    private var requestHeaders = HTTP2HeaderBlock()
    /// Emptied response-header storage, taken by the next responses (the server side keeps the
    /// same for requests): a response whose handler did not keep it gives its storage back.
    private var spareHeaders: [HTTP2HeaderFields] = []
    private var pings: [UInt64: (sent: NIODeadline, promise: EventLoopPromise<Duration>)] = [:]
    private var nextPing: UInt64 = 1
    private var goAway: HTTP2GoAway?
    private var closed = false
    private var isReading = false
    private var flushScheduled = false
    private var tlsNegotiated = false
    private var receivedSettings = false
    private var deadlineTimer: Scheduled<Void>?
    private var earliestDeadline = NIODeadline.distantFuture
    /// Completed once the server's first SETTINGS frame has arrived (and, over TLS, h2 was
    /// negotiated); failed if the connection ends first.
    let ready: EventLoopPromise<Void>

    init(shared: HTTP2ClientSharedState, usesTLS: Bool, ready: EventLoopPromise<Void>) {
        self.shared = shared
        self.usesTLS = usesTLS
        self.ready = ready
    }

    // MARK: Requests (on the event loop)

    /// Submits the request `compose` writes: its header block into the connection's reused
    /// storage, and the body it returns.
    func submit(_ pending: PendingHTTP2Request, compose: (inout HTTP2HeaderBlock) -> ByteBuffer?) {
        if pending.cancelled {
            pending.finish(.failure(HTTP2Error(.cancelled, requestWasNotProcessed: true)))
            return
        }
        guard let session, !closed else {
            pending.finish(.failure(HTTP2Error(.connectionClosed, requestWasNotProcessed: true)))
            return
        }
        if let goAway {
            pending.finish(.failure(HTTP2Error(.goAway(goAway), requestWasNotProcessed: true)))
            return
        }
        guard session.isAcceptingRequests else {
            // This side sent GOAWAY (closing, or after the server broke the protocol).
            pending.finish(.failure(HTTP2Error(.connectionClosed, requestWasNotProcessed: true)))
            return
        }
        do {
            requestHeaders.removeAll()
            let body = compose(&requestHeaders)
            let streamID = try session.submitRequest(requestHeaders, body: body)
            pending.streamID = streamID
            streams[streamID] = pending
            shared.openStreams.store(streams.count, ordering: .relaxed)
            if pending.deadline < earliestDeadline { earliestDeadline = pending.deadline }
            if deadlineTimer == nil, let context { armDeadlineTimer(context: context) }
            scheduleFlush()
        } catch {
            pending.finish(.failure(HTTP2Error(.protocolError("\(error)"), requestWasNotProcessed: true)))
        }
    }

    func submit(
        _ tags: [Int], deadline: NIODeadline, compose: (Int, inout HTTP2HeaderBlock) -> ByteBuffer?,
        onResponse: @escaping HTTP2ResponseHandler
    ) {
        for tag in tags {
            let pending: PendingHTTP2Request
            if let spare = spareRequests.popLast() {
                pending = spare
                pending.deadline = deadline
            } else {
                pending = PendingHTTP2Request(deadline: deadline)
                pending.reusable = true
            }
            pending.handler = onResponse
            pending.tag = tag
            submit(pending) { compose(tag, &$0) }
        }
    }

    func cancel(_ pending: PendingHTTP2Request) {
        pending.cancelled = true
        guard pending.streamID != 0, streams[pending.streamID] === pending else { return }
        session?.submitResetStream(streamID: pending.streamID, errorCode: HTTP2ErrorCode.cancel.rawValue)
        complete(pending.streamID, with: .failure(HTTP2Error(.cancelled, requestWasNotProcessed: false)))
        scheduleFlush()
    }

    func ping(promise: EventLoopPromise<Duration>) {
        guard let session, !closed else {
            promise.fail(HTTP2Error(.connectionClosed, requestWasNotProcessed: true))
            return
        }
        let opaque = nextPing
        nextPing &+= 1
        pings[opaque] = (NIODeadline.now(), promise)
        session.submitPing(opaqueData: opaque)
        scheduleFlush()
    }

    func close() {
        guard let context, !closed else { return }
        session?.submitGoAway(errorCode: HTTP2ErrorCode.noError.rawValue, debugData: [])
        flush()
        context.close(promise: nil)
    }

    private func complete(_ streamID: Int32, with result: Result<HTTP2Response, any Error>) {
        guard let pending = streams.removeValue(forKey: streamID) else { return }
        finish(pending, with: result)
    }

    /// Tells the request, removed from `streams`, of its result; keeps it for reuse when only
    /// this connection knew it.
    private func finish(_ pending: PendingHTTP2Request, with result: Result<HTTP2Response, any Error>) {
        shared.openStreams.store(streams.count, ordering: .relaxed)
        pending.finish(result)
        if pending.reusable, spareRequests.count < Self.maximumSpareRequests {
            pending.reset()
            spareRequests.append(pending)
        }
    }

    // MARK: Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { start(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context: context)
        context.fireChannelActive()
    }

    private func start(context: ChannelHandlerContext) {
        guard session == nil else { return }
        do {
            // Request bodies are small (APNs payloads); responses too. The session advertises
            // generous windows, so a server never waits for a WINDOW_UPDATE.
            self.session = try HTTP2ClientSession(
                handler: self, allocator: context.channel.allocator, maxConcurrentStreams: 100)
            flush()
        } catch {
            ready.fail(error)
            context.close(promise: nil)
            return
        }
    }

    /// Checks deadlines every 20 ms while requests are open: one timer per connection instead
    /// of one per request, and none while the connection is idle (a sender keeps two
    /// connections per app and environment open for half an hour unused).
    private func armDeadlineTimer(context: ChannelHandlerContext) {
        deadlineTimer = context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(20)) {
            self.deadlineTimer = nil
            guard !self.closed else { return }
            self.expireDeadlines()
            // A response handler may have submitted a request (and armed the timer) meanwhile.
            if !self.streams.isEmpty, self.deadlineTimer == nil { self.armDeadlineTimer(context: context) }
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let session else { return }
        isReading = true
        defer { isReading = false }
        do {
            try session.receive(unwrapInboundIn(data))
        } catch {
            shared.acceptingRequests.store(false, ordering: .relaxed)
            flush()
            fail(everything: HTTP2Error(.protocolError("\(error)"), requestWasNotProcessed: false))
            context.close(promise: nil)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        flush()
        context.fireChannelReadComplete()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSUserEvent, case .handshakeCompleted(let negotiated) = event {
            if negotiated == "h2" {
                tlsNegotiated = true
                markReadyIfComplete()
            } else {
                ready.fail(HTTP2Error(.http2NotNegotiated(negotiated), requestWasNotProcessed: true))
                context.close(promise: nil)
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        ready.fail(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        closed = true
        deadlineTimer?.cancel()
        shared.acceptingRequests.store(false, ordering: .relaxed)
        ready.fail(HTTP2Error(.connectionClosed, requestWasNotProcessed: true))
        fail(everything: HTTP2Error(.connectionClosed, requestWasNotProcessed: false))
        for (_, ping) in pings { ping.promise.fail(HTTP2Error(.connectionClosed, requestWasNotProcessed: true)) }
        pings.removeAll()
        shared.eventsContinuation.yield(.closed)
        shared.eventsContinuation.finish()
        context.fireChannelInactive()
    }

    private func fail(everything error: HTTP2Error) {
        let pending = streams
        streams.removeAll()
        shared.openStreams.store(0, ordering: .relaxed)
        for (_, request) in pending { request.finish(.failure(error)) }
    }

    private func markReadyIfComplete() {
        if receivedSettings && (tlsNegotiated || !usesTLS) { ready.succeed() }
    }

    private func expireDeadlines() {
        guard !streams.isEmpty else { return }
        let now = NIODeadline.now()
        guard now >= earliestDeadline else { return }
        var next = NIODeadline.distantFuture
        var expired: [Int32] = []
        for (streamID, pending) in streams {
            if pending.deadline <= now {
                expired.append(streamID)
            } else if pending.deadline < next {
                next = pending.deadline
            }
        }
        earliestDeadline = next
        for streamID in expired {
            session?.submitResetStream(streamID: streamID, errorCode: HTTP2ErrorCode.cancel.rawValue)
            complete(streamID, with: .failure(HTTP2Error(.deadlineExceeded, requestWasNotProcessed: false)))
        }
        if !expired.isEmpty { flush() }
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
        session.flush(to: context)
    }
}

extension HTTP2ClientHandler: HTTP2SessionDelegate {
    func sessionBeganHeaders(streamID: Int32) {
        receivingHeaders = streams[streamID]
    }

    func sessionReceivedHeader(streamID: Int32, name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        let pending: PendingHTTP2Request
        if let receiving = receivingHeaders, receiving.streamID == streamID {
            pending = receiving
        } else {
            guard let found = streams[streamID] else { return }
            pending = found
        }
        if pending.headers.count == 0, let spare = spareHeaders.popLast() { pending.headers = spare }
        if HTTP2FieldName.matches(name, ":status") {
            var status = 0
            for byte in value { status = status * 10 + Int(byte &- 48) }
            pending.status = status
        }
        pending.headers.append(name: name, value: value)
    }

    func sessionReceivedData(streamID: Int32, bytes: UnsafeRawBufferPointer) {
        guard let pending = streams[streamID], let context else { return }
        if pending.body == nil { pending.body = context.channel.allocator.buffer(capacity: max(bytes.count, 256)) }
        pending.body!.writeBytes(bytes)
    }

    func sessionReceivedFrame(_ frame: HTTP2ReceivedFrame) {
        switch frame {
        case .settings(ack: false):
            let limit = Int(session?.remoteMaxConcurrentStreams ?? 0)
            let previous = shared.maxConcurrentStreams.exchange(limit, ordering: .relaxed)
            if previous != limit || !receivedSettings {
                shared.eventsContinuation.yield(.maxConcurrentStreamsChanged(limit))
            }
            if !receivedSettings {
                receivedSettings = true
                markReadyIfComplete()
            }
        case .ping(ack: true, let opaque):
            if let ping = pings.removeValue(forKey: opaque) {
                let elapsed = NIODeadline.now() - ping.sent
                ping.promise.succeed(.nanoseconds(elapsed.nanoseconds))
            }
        case .goAway(let lastStreamID, let errorCode, let debugData):
            let goAway = HTTP2GoAway(
                lastStreamID: lastStreamID, errorCode: HTTP2ErrorCode(rawValue: errorCode), debugData: debugData)
            self.goAway = goAway
            shared.goAway.withLock { $0 = goAway }
            shared.acceptingRequests.store(false, ordering: .relaxed)
            shared.eventsContinuation.yield(.goAway(goAway))
        default:
            break
        }
    }

    func sessionClosedStream(streamID: Int32, errorCode: UInt32) {
        receivingHeaders = nil
        guard let pending = streams.removeValue(forKey: streamID) else { return }
        let code = HTTP2ErrorCode(rawValue: errorCode)
        if code == .noError && pending.status != 0 {
            var response = HTTP2Response(
                status: pending.status, headers: pending.headers, body: pending.body ?? ByteBuffer())
            pending.headers = HTTP2HeaderFields()
            pending.body = nil
            finish(pending, with: .success(response))
            // The handler has returned; unless it kept the response, its header storage is this
            // one's alone again and emptying it keeps the memory for the next response.
            if spareHeaders.count < 64 {
                response.headers.removeAll()
                spareHeaders.append(response.headers)
            }
        } else if let goAway, streamID > goAway.lastStreamID {
            finish(pending, with: .failure(HTTP2Error(.goAway(goAway), requestWasNotProcessed: true)))
        } else {
            finish(
                pending, with: .failure(HTTP2Error(.streamReset(code), requestWasNotProcessed: code == .refusedStream))
            )
        }
    }
}
