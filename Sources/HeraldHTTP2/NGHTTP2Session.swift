import CNGHTTP2
import NIOCore

/// SETTINGS identifiers, as nghttp2's settings entries take them.
enum NGHTTP2SettingsIdentifier {
    static let maxConcurrentStreams = Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue)
    static let initialWindowSize = Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue)
}

/// An error nghttp2 returned; `code` is one of its negative `NGHTTP2_ERR_*` values.
struct NGHTTP2LibraryError: Error, CustomStringConvertible {
    let operation: String
    let code: Int

    var description: String {
        let text = String(cString: nghttp2_strerror(Int32(truncatingIfNeeded: code)))
        return "nghttp2 \(operation) failed: \(text) (\(code))"
    }
}

/// One HTTP/2 session in libnghttp2: the only type in Herald that holds an nghttp2 pointer.
///
/// nghttp2 does the framing, HPACK, flow control and SETTINGS; this class feeds it the bytes
/// read from the socket (``receive(_:)``) and collects the bytes it wants written
/// (``drainOutput(into:)``). It is not thread-safe: its owner (a channel handler) uses it on
/// one event loop only.
final class NGHTTP2Session {
    /// The nghttp2 session. Created in `init` (nil only until then: creating it needs `self`
    /// as user data), deleted in `deinit`; never leaves this class.
    private var session: OpaquePointer!
    /// The server connection that owns this session and hears what it parses. Held
    /// unretained: the owner holds this session strongly (a strong reference back would be a
    /// cycle), and callbacks only run inside this class's own calls, which the owner makes while
    /// it is alive. A concrete class, not an existential: calling a delegate through an unowned
    /// existential retained and released it on every callback — several per request. (Herald's
    /// client frames HTTP/2 itself: ``HTTP2ClientSession``.)
    private let owner: Unmanaged<HTTP2ServerConnection>
    /// Request or response bodies waiting to be sent, by stream; read by nghttp2 through
    /// `readOutgoingBody` during `drainOutput`.
    private var outgoingBodies = HTTP2StreamTable<ByteBuffer>()
    /// nghttp2's memory for this session; released after the session is deleted (`deinit`).
    private let memory = NGHTTP2MemoryPool()

    /// A server session owned by `connection`.
    init(server connection: HTTP2ServerConnection) throws {
        self.owner = .passUnretained(connection)
        var callbacks: OpaquePointer?
        guard nghttp2_session_callbacks_new(&callbacks) == 0, let callbacks else {
            throw NGHTTP2LibraryError(operation: "callbacks_new", code: Int(NGHTTP2_ERR_NOMEM.rawValue))
        }
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, onBeginHeaders)
        nghttp2_session_callbacks_set_on_header_callback(callbacks, onHeader)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, onDataChunk)
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, onFrame)
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, onStreamClose)

        // `self` goes to nghttp2 as user_data, unretained. Lifetime: nghttp2 hands it back only
        // to the callbacks above, and those run only inside nghttp2 calls this object makes
        // (mem_recv, mem_send, submit_*); `deinit` deletes the session before `self` is gone.
        // So the pointer never outlives the object it points to.
        let userData = Unmanaged.passUnretained(self).toOpaque()
        var created: OpaquePointer?
        var allocator = memory.allocator
        let result = nghttp2_session_server_new3(&created, callbacks, userData, nil, &allocator)
        guard result == 0, let created else {
            throw NGHTTP2LibraryError(operation: "session_new", code: Int(result))
        }
        self.session = created
    }

    deinit {
        nghttp2_session_del(session)
    }

    // MARK: Input and output

    /// Feeds bytes read from the peer to nghttp2; the delegate hears about what they contain.
    /// - Throws: ``NGHTTP2LibraryError`` when the peer broke the protocol badly enough that the
    ///   connection must end (nghttp2 has queued a GOAWAY; drain and close).
    func receive(_ buffer: ByteBuffer) throws {
        let result = buffer.withUnsafeReadableBytes { bytes -> Int in
            guard let base = bytes.baseAddress else { return 0 }
            return nghttp2_session_mem_recv(session, base.assumingMemoryBound(to: UInt8.self), bytes.count)
        }
        if result < 0 { throw NGHTTP2LibraryError(operation: "mem_recv", code: result) }
    }

    /// Appends every byte nghttp2 wants to send to `buffer`.
    /// - Returns: whether anything was appended.
    @discardableResult
    func drainOutput(into buffer: inout ByteBuffer) throws -> Bool {
        var wrote = false
        while true {
            var chunk: UnsafePointer<UInt8>?
            let length = nghttp2_session_mem_send(session, &chunk)
            if length < 0 { throw NGHTTP2LibraryError(operation: "mem_send", code: length) }
            guard length > 0, let chunk else { return wrote }
            // `chunk` points into nghttp2's own buffer, valid until the next mem_send call:
            // copied out at once.
            buffer.writeBytes(UnsafeRawBufferPointer(start: chunk, count: length))
            wrote = true
        }
    }

    /// Writes and flushes what nghttp2 wants sent on `context`'s channel, and closes the channel
    /// when the session is finished or broken.
    /// - Returns: false when the channel is being closed.
    @discardableResult
    func flush(to context: ChannelHandlerContext) -> Bool {
        var buffer = context.channel.allocator.buffer(capacity: 4096)
        do {
            if try drainOutput(into: &buffer) { context.writeAndFlush(NIOAny(buffer), promise: nil) }
        } catch {
            context.close(promise: nil)
            return false
        }
        if isFinished {
            context.close(promise: nil)
            return false
        }
        return true
    }

    /// Whether nghttp2 still wants to read or write; when neither, the connection is done.
    var isFinished: Bool {
        nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0
    }

    // MARK: Submitting frames

    /// Queues SETTINGS with the given values (`NGHTTP2_SETTINGS_*` identifiers).
    func submitSettings(_ settings: [(identifier: Int32, value: UInt32)]) throws {
        let entries = settings.map { nghttp2_settings_entry(settings_id: $0.identifier, value: $0.value) }
        let result = entries.withUnsafeBufferPointer {
            nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), $0.baseAddress, $0.count)
        }
        if result != 0 { throw NGHTTP2LibraryError(operation: "submit_settings", code: Int(result)) }
    }

    /// Queues a request; nghttp2 holds it back while the peer's stream limit is reached.
    /// - Returns: the stream id nghttp2 assigned.
    func submitRequest(_ fields: borrowing HTTP2HeaderBlock, body: ByteBuffer?) throws -> Int32 {
        let hasBody = body.map { $0.readableBytes > 0 } ?? false
        let streamID = fields.withNameValuePairs { pairs, count -> Int32 in
            if hasBody {
                var provider = nghttp2_data_provider(
                    source: nghttp2_data_source(ptr: nil), read_callback: readOutgoingBodyCallback)
                return nghttp2_submit_request(session, nil, pairs, count, &provider, nil)
            }
            return nghttp2_submit_request(session, nil, pairs, count, nil, nil)
        }
        if streamID < 0 { throw NGHTTP2LibraryError(operation: "submit_request", code: Int(streamID)) }
        if hasBody, let body { outgoingBodies[streamID] = body }
        return streamID
    }

    /// Queues the response on `streamID`; with no body, the HEADERS frame ends the stream.
    func submitResponse(streamID: Int32, _ fields: borrowing HTTP2HeaderBlock, body: ByteBuffer?) throws {
        let hasBody = body.map { $0.readableBytes > 0 } ?? false
        if hasBody, let body { outgoingBodies[streamID] = body }
        let result = fields.withNameValuePairs { pairs, count -> Int32 in
            if hasBody {
                var provider = nghttp2_data_provider(
                    source: nghttp2_data_source(ptr: nil), read_callback: readOutgoingBodyCallback)
                return nghttp2_submit_response(session, streamID, pairs, count, &provider)
            }
            return nghttp2_submit_response(session, streamID, pairs, count, nil)
        }
        if result != 0 {
            outgoingBodies[streamID] = nil
            throw NGHTTP2LibraryError(operation: "submit_response", code: Int(result))
        }
    }

    func submitResetStream(streamID: Int32, errorCode: UInt32) {
        _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, errorCode)
    }

    /// Queues GOAWAY. `lastStreamID` nil means the last stream this side has processed.
    func submitGoAway(lastStreamID: Int32? = nil, errorCode: UInt32, debugData: [UInt8]) {
        let last = lastStreamID ?? nghttp2_session_get_last_proc_stream_id(session)
        _ = debugData.withUnsafeBufferPointer {
            nghttp2_submit_goaway(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), last, errorCode, $0.baseAddress, $0.count)
        }
    }

    func submitPing(opaqueData: UInt64) {
        withUnsafeBytes(of: opaqueData) { bytes in
            _ = nghttp2_submit_ping(
                session, UInt8(NGHTTP2_FLAG_NONE.rawValue), bytes.baseAddress?.assumingMemoryBound(to: UInt8.self))
        }
    }

    // MARK: Reading state

    /// The peer's current SETTINGS_MAX_CONCURRENT_STREAMS (nghttp2 assumes 100 until the peer's
    /// first SETTINGS frame arrives).
    var remoteMaxConcurrentStreams: UInt32 {
        nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)
    }

    /// The highest stream id this side received and handed to the application.
    var lastProcessedStreamID: Int32 {
        nghttp2_session_get_last_proc_stream_id(session)
    }

    // MARK: Called back by nghttp2 (see the C callbacks below)

    fileprivate func readOutgoingBody(
        streamID: Int32, into destination: UnsafeMutablePointer<UInt8>, capacity: Int,
        flags: UnsafeMutablePointer<UInt32>
    ) -> Int {
        guard var body = outgoingBodies.removeValue(forKey: streamID) else {
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            return 0
        }
        let count = min(capacity, body.readableBytes)
        body.readWithUnsafeReadableBytes { bytes in
            UnsafeMutableRawPointer(destination).copyMemory(from: bytes.baseAddress!, byteCount: count)
            return count
        }
        if body.readableBytes == 0 {
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
        } else {
            outgoingBodies[streamID] = body
        }
        return count
    }

    /// Calls `body` with the owner, without retaining it (see ``owner``).
    @inline(__always)
    fileprivate func withDelegate<Result>(_ body: (any HTTP2SessionDelegate) -> Result) -> Result {
        owner._withUnsafeGuaranteedRef { body($0) }
    }

    fileprivate func forgetStream(_ streamID: Int32) {
        if !outgoingBodies.isEmpty { outgoingBodies[streamID] = nil }
    }
}

// MARK: - The C callbacks
//
// Each turns `user_data` back into the `NGHTTP2Session` that registered it (see `init` for why
// the unretained pointer is alive) and forwards to its delegate. None of them lets a pointer
// escape: buffers are handed on as `UnsafeRawBufferPointer`s valid only during the call.

/// Calls `body` with the session behind `userData` without retaining it: the session is alive
/// for the whole callback (see `init`), and a retain/release pair per header field is a
/// measurable share of a request's cost.
@inline(__always)
private func withOwningSession<Result>(_ userData: UnsafeMutableRawPointer?, _ body: (NGHTTP2Session) -> Result)
    -> Result
{
    Unmanaged<NGHTTP2Session>.fromOpaque(userData!)._withUnsafeGuaranteedRef(body)
}

private let onBeginHeaders: nghttp2_on_begin_headers_callback = { _, frame, userData in
    withOwningSession(userData) { session in
        session.withDelegate { $0.sessionBeganHeaders(streamID: frame!.pointee.hd.stream_id) }
    }
    return 0
}

private let onHeader: nghttp2_on_header_callback = { _, frame, name, nameLength, value, valueLength, _, userData in
    withOwningSession(userData) { session in
        session.withDelegate {
            $0.sessionReceivedHeader(
                streamID: frame!.pointee.hd.stream_id,
                name: UnsafeRawBufferPointer(start: name, count: nameLength),
                value: UnsafeRawBufferPointer(start: value, count: valueLength)
            )
        }
    }
    return 0
}

private let onDataChunk: nghttp2_on_data_chunk_recv_callback = { _, _, streamID, data, length, userData in
    withOwningSession(userData) { session in
        session.withDelegate {
            $0.sessionReceivedData(streamID: streamID, bytes: UnsafeRawBufferPointer(start: data, count: length))
        }
    }
    return 0
}

private let onFrame: nghttp2_on_frame_recv_callback = { _, frame, userData in
    let header = frame!.pointee.hd
    let endStream = header.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
    let ack = header.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0
    let received: HTTP2ReceivedFrame
    switch UInt32(header.type) {
    case NGHTTP2_HEADERS.rawValue:
        received = .headers(streamID: header.stream_id, endStream: endStream)
    case NGHTTP2_DATA.rawValue:
        received = .data(streamID: header.stream_id, endStream: endStream)
    case NGHTTP2_SETTINGS.rawValue:
        received = .settings(ack: ack)
    case NGHTTP2_PING.rawValue:
        let opaque = withUnsafeBytes(of: frame!.pointee.ping.opaque_data) { $0.loadUnaligned(as: UInt64.self) }
        received = .ping(ack: ack, opaqueData: opaque)
    case NGHTTP2_GOAWAY.rawValue:
        let goAway = frame!.pointee.goaway
        let debug =
            goAway.opaque_data_len > 0 && goAway.opaque_data != nil
            ? Array(UnsafeBufferPointer(start: goAway.opaque_data, count: goAway.opaque_data_len)) : []
        received = .goAway(lastStreamID: goAway.last_stream_id, errorCode: goAway.error_code, debugData: debug)
    case NGHTTP2_RST_STREAM.rawValue:
        received = .resetStream(streamID: header.stream_id, errorCode: frame!.pointee.rst_stream.error_code)
    default:
        received = .other
    }
    withOwningSession(userData) { session in session.withDelegate { $0.sessionReceivedFrame(received) } }
    return 0
}

private let onStreamClose: nghttp2_on_stream_close_callback = { _, streamID, errorCode, userData in
    withOwningSession(userData) { session in
        session.forgetStream(streamID)
        session.withDelegate { $0.sessionClosedStream(streamID: streamID, errorCode: errorCode) }
    }
    return 0
}

private let readOutgoingBodyCallback: nghttp2_data_source_read_callback = {
    _, streamID, destination, capacity, flags, _, userData in
    withOwningSession(userData) {
        $0.readOutgoingBody(streamID: streamID, into: destination!, capacity: capacity, flags: flags!)
    }
}
