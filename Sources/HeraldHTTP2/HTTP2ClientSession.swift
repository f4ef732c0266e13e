import NIOCore

/// A connection error the client found in what the server sent (RFC 9113 §5.4.1): the session
/// has queued a GOAWAY with `code`, and the connection must close.
struct HTTP2ConnectionError: Error, CustomStringConvertible {
    let code: HTTP2ErrorCode
    let reason: String

    var description: String { "\(reason) (\(code))" }
}

/// The client side of one HTTP/2 connection, framed by Herald itself: it writes requests
/// straight into the bytes the connection sends, and reads the server's frames into the calls
/// of its delegate (the connection's ``HTTP2ClientHandler``; a test's recorder in
/// `HTTP2ClientSessionTests`, which drive it frame by frame without a socket).
///
/// Why not nghttp2 here as on the server side: under `make bench-sender` nghttp2 was a third of
/// herald-sender's CPU, much of it work an APNs client does not need — a queue item and stream
/// object per request, a priority tree, and HPACK Huffman-coding of each request's new literal
/// values. This session does the part of RFC 9113 a client of a request/response server needs:
/// SETTINGS (both ways, with ACKs), HEADERS and CONTINUATION, DATA with flow control in both
/// directions, RST_STREAM, PING, GOAWAY and WINDOW_UPDATE, the server's stream limit (requests
/// over it wait here, in order), and the connection errors RFC 9113 names for malformed frames.
/// Header blocks are written by ``HPACKEncoder`` and read by nghttp2's own HPACK decoder
/// (``NGHTTP2HeaderDecoder``). Server push is refused (SETTINGS_ENABLE_PUSH 0); PRIORITY and
/// unknown frame types are ignored.
///
/// Limits it keeps: frames up to 16,384 bytes (the default SETTINGS_MAX_FRAME_SIZE, which it
/// does not raise), a response header block up to 64 KiB, and a dynamic table of at most 4,096
/// bytes for what it sends.
///
/// Not thread-safe: its handler uses it on the connection's event loop only.
final class HTTP2ClientSession<Delegate: HTTP2SessionDelegate> {
    /// What the session knows of one open stream.
    struct Stream {
        /// How much DATA the server lets this stream send.
        var sendWindow: Int
        /// How much DATA the server may still send before this side grants more.
        var receiveWindow: Int
        /// The part of the request body not sent yet (nil once END_STREAM is out).
        var body: ByteBuffer? = nil
        /// Whether the stream waits on a window for its body (and is in `blockedStreams`).
        var isBlocked = false
    }

    /// A request waiting for the server's stream limit, with its stream id already assigned.
    struct WaitingRequest {
        let streamID: Int32
        let block: HTTP2HeaderBlock
        let body: ByteBuffer?
        var cancelled = false
    }

    /// The handler that owns this session and hears what the server sent. Unowned and
    /// unretained: the handler holds the session strongly and calls into it only while alive,
    /// and the session calls back only inside those calls. (Generic, not an existential, so
    /// that each call is a direct one: as in ``NGHTTP2Session``.)
    private unowned(unsafe) let handler: Delegate
    private let allocator: ByteBufferAllocator
    /// Bytes to send, written as frames are made and handed to the channel by ``flush(to:)``.
    private var output: ByteBuffer
    /// A frame that arrived in part, waiting for the rest.
    private var partialInput: ByteBuffer?
    private var encoder = HPACKEncoder()
    /// Each request's header block is encoded here before it is cut into frames.
    private var encoded: [UInt8] = []
    private let decoder: NGHTTP2HeaderDecoder

    private var streams = HTTP2StreamTable<Stream>()
    private var waiting: [WaitingRequest] = []
    private var firstWaiting = 0
    /// Streams whose body waits on a window, in the order they blocked.
    private var blockedStreams: [Int32] = []
    /// Scratch for ``resumeBlockedStreams()``, kept between calls.
    private var stillBlocked: [Int32] = []
    private var nextStreamID: Int32 = 1

    // The server's settings, as RFC 9113 has them until its SETTINGS frame says otherwise
    // (the stream limit as nghttp2 assumes it: 100, not unlimited).
    private(set) var remoteMaxConcurrentStreams: UInt32 = 100
    private var remoteInitialWindowSize = 65_535
    private var remoteMaxFrameSize = 16_384
    private var connectionSendWindow = 65_535
    private var receivedSettings = false

    // What this side announced (computed: a generic type has no static stored properties).
    static var localMaxFrameSize: Int { 16_384 }
    static var localInitialWindowSize: Int { 1 << 20 }
    static var localConnectionWindowSize: Int { 1 << 24 }
    static var maximumHeaderBlockSize: Int { 64 << 10 }
    private var connectionReceiveWindow = 1 << 24

    /// A header block that continues in CONTINUATION frames: its stream and the bytes so far.
    private var continuation: (streamID: Int32, endStream: Bool, block: [UInt8])?
    private var goAwaySent = false
    private var goAwayReceived = false
    /// Set by a connection error in what the server sent.
    private var failed = false

    /// Starts the connection: the client preface, SETTINGS (no push, the stream limit and window
    /// this side grants) and a WINDOW_UPDATE that opens the connection's window as wide.
    init(handler: Delegate, allocator: ByteBufferAllocator, maxConcurrentStreams: UInt32) throws {
        self.handler = handler
        self.allocator = allocator
        self.output = allocator.buffer(capacity: 4096)
        self.decoder = try NGHTTP2HeaderDecoder()
        output.writeString("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        writeFrameHeader(length: 18, type: .settings, flags: 0, streamID: 0)
        let settings: [(UInt16, UInt32)] = [
            (HTTP2Frame.Setting.enablePush, 0), (HTTP2Frame.Setting.maxConcurrentStreams, maxConcurrentStreams),
            (HTTP2Frame.Setting.initialWindowSize, UInt32(Self.localInitialWindowSize)),
        ]
        for (identifier, value) in settings {
            output.writeInteger(identifier)
            output.writeInteger(value)
        }
        writeWindowUpdate(streamID: 0, increment: Self.localConnectionWindowSize - 65_535)
    }

    // MARK: Sending

    /// Starts a request: its HEADERS (and DATA) go out at once, or when the server's stream limit
    /// leaves room, in the order submitted.
    /// - Returns: the stream id assigned to it.
    /// - Throws: ``HTTP2ConnectionError`` when the connection is going away or has used every
    ///   stream id.
    func submitRequest(_ block: borrowing HTTP2HeaderBlock, body: ByteBuffer?) throws -> Int32 {
        guard !goAwaySent, !goAwayReceived else {
            throw HTTP2ConnectionError(code: .refusedStream, reason: "the connection is going away")
        }
        guard nextStreamID > 0 else {
            throw HTTP2ConnectionError(code: .refusedStream, reason: "the connection has used every stream id")
        }
        let streamID = nextStreamID
        nextStreamID &+= 2
        let body = body.flatMap { $0.readableBytes > 0 ? $0 : nil }
        if firstWaiting == waiting.count && streams.count < Int(remoteMaxConcurrentStreams) {
            open(streamID, block, body: body)
        } else {
            waiting.append(WaitingRequest(streamID: streamID, block: copy block, body: body))
        }
        return streamID
    }

    /// Resets `streamID` (a stream this side gives up on). Its handler is not called back: the
    /// caller has already finished the request. A request still waiting for the stream limit is
    /// dropped before it is sent.
    func submitResetStream(streamID: Int32, errorCode: UInt32) {
        if streams.removeValue(forKey: streamID) != nil {
            writeResetStream(streamID: streamID, errorCode: errorCode)
            openWaitingRequests()
            return
        }
        for index in firstWaiting..<waiting.count where waiting[index].streamID == streamID {
            waiting[index].cancelled = true
        }
    }

    /// Queues GOAWAY: this side opens no more streams. The server opens none (push is off), so
    /// the last stream id is 0.
    func submitGoAway(errorCode: UInt32, debugData: [UInt8]) {
        writeGoAway(errorCode: errorCode, debugData: debugData)
    }

    func submitPing(opaqueData: UInt64) {
        writeFrameHeader(length: 8, type: .ping, flags: 0, streamID: 0)
        withUnsafeBytes(of: opaqueData) { output.writeBytes($0) }
    }

    /// Writes and flushes what is waiting to be sent on `context`'s channel, and closes the
    /// channel once the connection is finished.
    /// - Returns: false when the channel is being closed.
    @discardableResult
    func flush(to context: ChannelHandlerContext) -> Bool {
        if let bytes = takeOutput() { context.writeAndFlush(NIOAny(bytes), promise: nil) }
        if isFinished {
            context.close(promise: nil)
            return false
        }
        return true
    }

    /// The bytes waiting to be sent, if any; the session starts a new buffer.
    func takeOutput() -> ByteBuffer? {
        guard output.readableBytes > 0 else { return nil }
        defer { output = allocator.buffer(capacity: 4096) }
        return output
    }

    /// Whether a request submitted now would be sent: no GOAWAY either way, stream ids left.
    var isAcceptingRequests: Bool { !goAwaySent && !goAwayReceived && nextStreamID > 0 }

    /// Whether the connection is done: a GOAWAY went either way and no stream is left.
    var isFinished: Bool {
        (goAwaySent || goAwayReceived) && streams.isEmpty && firstWaiting == waiting.count
    }

    private func open(_ streamID: Int32, _ block: borrowing HTTP2HeaderBlock, body: ByteBuffer?) {
        encoded.removeAll(keepingCapacity: true)
        encoder.encode(block, into: &encoded)
        let endStream: UInt8 = body == nil ? HTTP2Frame.Flags.endStream : 0
        encoded.withUnsafeBytes { block in
            var offset = 0
            var first = true
            repeat {
                let length = min(block.count - offset, remoteMaxFrameSize)
                let last = offset + length == block.count
                writeFrameHeader(
                    length: length, type: first ? .headers : .continuation,
                    flags: (first ? endStream : 0) | (last ? HTTP2Frame.Flags.endHeaders : 0), streamID: streamID)
                output.writeBytes(UnsafeRawBufferPointer(rebasing: block[offset..<(offset + length)]))
                offset += length
                first = false
            } while offset < block.count
        }
        var stream = Stream(sendWindow: remoteInitialWindowSize, receiveWindow: Self.localInitialWindowSize)
        if var body {
            // Usually the whole body fits the windows and the stream is stored once, done.
            if !writeBody(&body, streamID: streamID, streamWindow: &stream.sendWindow) {
                stream.body = body
                stream.isBlocked = true
                blockedStreams.append(streamID)
            }
        }
        streams[streamID] = stream
    }

    /// Writes as much of `body` as the windows allow as DATA frames, the last with END_STREAM.
    /// - Returns: whether all of it went; if not, the rest waits for a WINDOW_UPDATE or SETTINGS.
    private func writeBody(_ body: inout ByteBuffer, streamID: Int32, streamWindow: inout Int) -> Bool {
        while true {
            let length = min(body.readableBytes, connectionSendWindow, streamWindow, remoteMaxFrameSize)
            if length <= 0 { return false }
            let last = length == body.readableBytes
            writeFrameHeader(
                length: length, type: .data, flags: last ? HTTP2Frame.Flags.endStream : 0, streamID: streamID)
            var chunk = body.readSlice(length: length)!
            output.writeBuffer(&chunk)
            connectionSendWindow -= length
            streamWindow -= length
            if last { return true }
        }
    }

    /// Sends what the windows now let blocked streams send, in the order they blocked; stops at
    /// the first the connection's window cannot serve, so the rest are not visited for nothing.
    private func resumeBlockedStreams() {
        guard !blockedStreams.isEmpty, connectionSendWindow > 0 else { return }
        stillBlocked.removeAll(keepingCapacity: true)
        var index = 0
        while index < blockedStreams.count, connectionSendWindow > 0 {
            let streamID = blockedStreams[index]
            index += 1
            guard var stream = streams[streamID], var body = stream.body else { continue }
            if stream.sendWindow <= 0 {
                stillBlocked.append(streamID)
                continue
            }
            stream.body = nil
            let finished = writeBody(&body, streamID: streamID, streamWindow: &stream.sendWindow)
            if !finished {
                stream.body = body
                stillBlocked.append(streamID)
            }
            stream.isBlocked = !finished
            streams[streamID] = stream
        }
        stillBlocked.append(contentsOf: blockedStreams[index...])
        swap(&blockedStreams, &stillBlocked)
    }

    /// Opens waiting requests while the server's stream limit leaves room.
    private func openWaitingRequests() {
        while firstWaiting < waiting.count, streams.count < Int(remoteMaxConcurrentStreams), !goAwayReceived {
            let request = waiting[firstWaiting]
            firstWaiting += 1
            if !request.cancelled { open(request.streamID, request.block, body: request.body) }
        }
        if firstWaiting == waiting.count {
            waiting.removeAll(keepingCapacity: true)
            firstWaiting = 0
        }
    }

    // MARK: Receiving

    /// Reads the server's frames from `buffer` (a frame cut across reads waits for the rest).
    /// - Throws: ``HTTP2ConnectionError`` (or the HPACK decoder's error) when the server broke
    ///   the protocol; a GOAWAY is then queued and the connection must close.
    func receive(_ buffer: ByteBuffer) throws {
        // After a connection error nothing more is read: the connection is closing.
        guard !failed else { return }
        if var partial = partialInput {
            partialInput = nil
            partial.writeImmutableBuffer(buffer)
            try readFrames(from: &partial)
            if partial.readableBytes > 0 { partialInput = partial }
        } else {
            var input = buffer
            try readFrames(from: &input)
            if input.readableBytes > 0 { partialInput = input }
        }
    }

    private func readFrames(from input: inout ByteBuffer) throws {
        do {
            while input.readableBytes >= 9 {
                let start = input.readerIndex
                let length =
                    Int(input.getInteger(at: start, as: UInt16.self)!) << 8
                    | Int(input.getInteger(at: start + 2, as: UInt8.self)!)
                if length > Self.localMaxFrameSize {
                    throw HTTP2ConnectionError(code: .frameSizeError, reason: "a \(length)-byte frame, over 16,384")
                }
                guard input.readableBytes >= 9 + length else { return }
                let type = input.getInteger(at: start + 3, as: UInt8.self)!
                let flags = input.getInteger(at: start + 4, as: UInt8.self)!
                let streamID = Int32(bitPattern: input.getInteger(at: start + 5, as: UInt32.self)! & 0x7fff_ffff)
                try input.withUnsafeReadableBytes { bytes in
                    let payload = UnsafeRawBufferPointer(rebasing: bytes[9..<(9 + length)])
                    try readFrame(type: type, flags: flags, streamID: streamID, payload: payload)
                }
                input.moveReaderIndex(forwardBy: 9 + length)
            }
        } catch let error as HTTP2ConnectionError {
            failed = true
            partialInput = nil
            writeGoAway(errorCode: error.code.rawValue, debugData: Array(error.reason.utf8.prefix(256)))
            throw error
        } catch {
            failed = true
            partialInput = nil
            writeGoAway(errorCode: HTTP2ErrorCode.compressionError.rawValue, debugData: [])
            throw error
        }
    }

    private func readFrame(type: UInt8, flags: UInt8, streamID: Int32, payload: UnsafeRawBufferPointer) throws {
        if let continuation, type != HTTP2Frame.Kind.continuation.rawValue || streamID != continuation.streamID {
            throw HTTP2ConnectionError(code: .protocolError, reason: "a header block interrupted by another frame")
        }
        if !receivedSettings && type != HTTP2Frame.Kind.settings.rawValue {
            throw HTTP2ConnectionError(code: .protocolError, reason: "the server's first frame is not SETTINGS")
        }
        switch HTTP2Frame.Kind(rawValue: type) {
        case .data: try readData(flags: flags, streamID: streamID, payload: payload)
        case .headers: try readHeaders(flags: flags, streamID: streamID, payload: payload)
        case .continuation: try readContinuation(flags: flags, streamID: streamID, payload: payload)
        case .resetStream: try readResetStream(streamID: streamID, payload: payload)
        case .settings: try readSettings(flags: flags, streamID: streamID, payload: payload)
        case .ping: try readPing(flags: flags, streamID: streamID, payload: payload)
        case .goAway: try readGoAway(streamID: streamID, payload: payload)
        case .windowUpdate: try readWindowUpdate(streamID: streamID, payload: payload)
        case .pushPromise:
            throw HTTP2ConnectionError(code: .protocolError, reason: "PUSH_PROMISE, though push is disabled")
        case .priority:
            if streamID == 0 { throw HTTP2ConnectionError(code: .protocolError, reason: "PRIORITY on stream 0") }
            if payload.count != 5 { throw HTTP2ConnectionError(code: .frameSizeError, reason: "PRIORITY not 5 bytes") }
        case nil:
            break  // Unknown frame types are ignored (RFC 9113 §4.1).
        }
    }

    /// Checks that `streamID` is one this side could have opened (odd and already used).
    private func checkPeerMayUse(_ streamID: Int32, in frame: String) throws {
        if streamID == 0 { throw HTTP2ConnectionError(code: .protocolError, reason: "\(frame) on stream 0") }
        if streamID & 1 == 0 || streamID >= nextStreamID {
            throw HTTP2ConnectionError(code: .protocolError, reason: "\(frame) on stream \(streamID), never opened")
        }
    }

    /// The frame's content without its padding (when the PADDED flag is set).
    private func unpadded(_ payload: UnsafeRawBufferPointer, flags: UInt8, skipping extra: Int = 0) throws
        -> UnsafeRawBufferPointer
    {
        var start = 0
        var end = payload.count
        if flags & HTTP2Frame.Flags.padded != 0 {
            guard payload.count >= 1 else {
                throw HTTP2ConnectionError(code: .frameSizeError, reason: "a padded frame without its pad length")
            }
            end -= Int(payload[0])
            start = 1
        }
        start += extra
        guard start <= end else {
            throw HTTP2ConnectionError(code: .protocolError, reason: "padding longer than the frame")
        }
        return UnsafeRawBufferPointer(rebasing: payload[start..<end])
    }

    private func readData(flags: UInt8, streamID: Int32, payload: UnsafeRawBufferPointer) throws {
        try checkPeerMayUse(streamID, in: "DATA")
        connectionReceiveWindow -= payload.count
        if connectionReceiveWindow < 0 {
            throw HTTP2ConnectionError(code: .flowControlError, reason: "DATA beyond the connection's window")
        }
        if connectionReceiveWindow <= Self.localConnectionWindowSize / 2 {
            writeWindowUpdate(streamID: 0, increment: Self.localConnectionWindowSize - connectionReceiveWindow)
            connectionReceiveWindow = Self.localConnectionWindowSize
        }
        let data = try unpadded(payload, flags: flags)
        guard var stream = streams[streamID] else { return }  // a stream already closed here
        stream.receiveWindow -= payload.count
        if stream.receiveWindow < 0 {
            closeStream(streamID, errorCode: .flowControlError, reset: true)
            return
        }
        let endStream = flags & HTTP2Frame.Flags.endStream != 0
        if !endStream && stream.receiveWindow <= Self.localInitialWindowSize / 2 {
            writeWindowUpdate(streamID: streamID, increment: Self.localInitialWindowSize - stream.receiveWindow)
            stream.receiveWindow = Self.localInitialWindowSize
        }
        streams[streamID] = stream
        if !data.isEmpty { handler.sessionReceivedData(streamID: streamID, bytes: data) }
        if endStream { closeStream(streamID, errorCode: .noError, reset: false) }
    }

    private func readHeaders(flags: UInt8, streamID: Int32, payload: UnsafeRawBufferPointer) throws {
        try checkPeerMayUse(streamID, in: "HEADERS")
        let fragment = try unpadded(payload, flags: flags, skipping: flags & HTTP2Frame.Flags.priority != 0 ? 5 : 0)
        let endStream = flags & HTTP2Frame.Flags.endStream != 0
        if flags & HTTP2Frame.Flags.endHeaders != 0 {
            try deliverHeaders(fragment, streamID: streamID, endStream: endStream)
        } else {
            continuation = (streamID, endStream, Array(fragment))
        }
    }

    private func readContinuation(flags: UInt8, streamID: Int32, payload: UnsafeRawBufferPointer) throws {
        guard var pending = continuation else {
            throw HTTP2ConnectionError(code: .protocolError, reason: "CONTINUATION without a header block before it")
        }
        continuation = nil
        pending.block.append(contentsOf: payload)
        if pending.block.count > Self.maximumHeaderBlockSize {
            throw HTTP2ConnectionError(
                code: .enhanceYourCalm, reason: "a header block over \(Self.maximumHeaderBlockSize >> 10) KiB")
        }
        if flags & HTTP2Frame.Flags.endHeaders != 0 {
            try pending.block.withUnsafeBytes {
                try deliverHeaders($0, streamID: streamID, endStream: pending.endStream)
            }
        } else {
            continuation = pending
        }
    }

    /// Decodes a whole header block (always: the decoder's table must follow the server's even
    /// for a stream this side has given up on) and hands its fields to the handler.
    private func deliverHeaders(_ block: UnsafeRawBufferPointer, streamID: Int32, endStream: Bool) throws {
        let isOpen = streams[streamID] != nil
        if isOpen { handler.sessionBeganHeaders(streamID: streamID) }
        let handler = self.handler
        try decoder.decode(block) { name, value in
            if isOpen { handler.sessionReceivedHeader(streamID: streamID, name: name, value: value) }
        }
        if isOpen && endStream { closeStream(streamID, errorCode: .noError, reset: false) }
    }

    private func readResetStream(streamID: Int32, payload: UnsafeRawBufferPointer) throws {
        try checkPeerMayUse(streamID, in: "RST_STREAM")
        if payload.count != 4 { throw HTTP2ConnectionError(code: .frameSizeError, reason: "RST_STREAM not 4 bytes") }
        let code = payload.loadUnaligned(as: UInt32.self).bigEndian
        if streams[streamID] != nil { closeStream(streamID, errorCode: HTTP2ErrorCode(rawValue: code), reset: false) }
    }

    private func readSettings(flags: UInt8, streamID: Int32, payload: UnsafeRawBufferPointer) throws {
        if streamID != 0 { throw HTTP2ConnectionError(code: .protocolError, reason: "SETTINGS on a stream") }
        if flags & HTTP2Frame.Flags.ack != 0 {
            if payload.count != 0 {
                throw HTTP2ConnectionError(code: .frameSizeError, reason: "a SETTINGS acknowledgement with a payload")
            }
            return
        }
        if payload.count % 6 != 0 {
            throw HTTP2ConnectionError(code: .frameSizeError, reason: "SETTINGS not a multiple of 6 bytes")
        }
        for offset in stride(from: 0, to: payload.count, by: 6) {
            let identifier = payload.loadUnaligned(fromByteOffset: offset, as: UInt16.self).bigEndian
            let value = payload.loadUnaligned(fromByteOffset: offset + 2, as: UInt32.self).bigEndian
            switch identifier {
            case HTTP2Frame.Setting.headerTableSize:
                encoder.setPeerTableSize(Int(value))
            case HTTP2Frame.Setting.maxConcurrentStreams:
                remoteMaxConcurrentStreams = value
            case HTTP2Frame.Setting.initialWindowSize:
                guard value <= 0x7fff_ffff else {
                    throw HTTP2ConnectionError(code: .flowControlError, reason: "an initial window over 2^31-1")
                }
                let change = Int(value) - remoteInitialWindowSize
                remoteInitialWindowSize = Int(value)
                if change != 0 { try changeSendWindows(by: change) }
            case HTTP2Frame.Setting.maxFrameSize:
                guard (16_384...16_777_215).contains(value) else {
                    throw HTTP2ConnectionError(code: .protocolError, reason: "a maximum frame size of \(value)")
                }
                remoteMaxFrameSize = Int(value)
            default:
                break  // SETTINGS_ENABLE_PUSH and SETTINGS_MAX_HEADER_LIST_SIZE ask nothing of a client.
            }
        }
        writeFrameHeader(length: 0, type: .settings, flags: HTTP2Frame.Flags.ack, streamID: 0)
        receivedSettings = true
        handler.sessionReceivedFrame(.settings(ack: false))
        openWaitingRequests()
        resumeBlockedStreams()
    }

    private func changeSendWindows(by change: Int) throws {
        var updated: [(Int32, Stream)] = []
        for (streamID, var stream) in streams {
            stream.sendWindow += change
            if stream.sendWindow > 0x7fff_ffff {
                throw HTTP2ConnectionError(code: .flowControlError, reason: "a stream's window over 2^31-1")
            }
            updated.append((streamID, stream))
        }
        for (streamID, stream) in updated { streams[streamID] = stream }
    }

    private func readPing(flags: UInt8, streamID: Int32, payload: UnsafeRawBufferPointer) throws {
        if streamID != 0 { throw HTTP2ConnectionError(code: .protocolError, reason: "PING on a stream") }
        if payload.count != 8 { throw HTTP2ConnectionError(code: .frameSizeError, reason: "PING not 8 bytes") }
        if flags & HTTP2Frame.Flags.ack != 0 {
            handler.sessionReceivedFrame(.ping(ack: true, opaqueData: payload.loadUnaligned(as: UInt64.self)))
        } else {
            writeFrameHeader(length: 8, type: .ping, flags: HTTP2Frame.Flags.ack, streamID: 0)
            output.writeBytes(payload)
        }
    }

    private func readGoAway(streamID: Int32, payload: UnsafeRawBufferPointer) throws {
        if streamID != 0 { throw HTTP2ConnectionError(code: .protocolError, reason: "GOAWAY on a stream") }
        if payload.count < 8 { throw HTTP2ConnectionError(code: .frameSizeError, reason: "GOAWAY under 8 bytes") }
        let lastStreamID = Int32(bitPattern: payload.loadUnaligned(as: UInt32.self).bigEndian & 0x7fff_ffff)
        let code = payload.loadUnaligned(fromByteOffset: 4, as: UInt32.self).bigEndian
        goAwayReceived = true
        handler.sessionReceivedFrame(
            .goAway(lastStreamID: lastStreamID, errorCode: code, debugData: Array(payload[8...])))
        // Streams above the last one the server processed never reached it: they end now, as
        // do requests still waiting to be sent.
        var unprocessed: [Int32] = []
        for (id, _) in streams where id > lastStreamID { unprocessed.append(id) }
        for id in unprocessed.sorted() { closeStream(id, errorCode: .refusedStream, reset: false) }
        let stillWaiting = waiting[firstWaiting...].filter { !$0.cancelled }.map(\.streamID)
        waiting.removeAll()
        firstWaiting = 0
        for id in stillWaiting {
            handler.sessionClosedStream(streamID: id, errorCode: HTTP2ErrorCode.refusedStream.rawValue)
        }
    }

    private func readWindowUpdate(streamID: Int32, payload: UnsafeRawBufferPointer) throws {
        if payload.count != 4 { throw HTTP2ConnectionError(code: .frameSizeError, reason: "WINDOW_UPDATE not 4 bytes") }
        let increment = Int(payload.loadUnaligned(as: UInt32.self).bigEndian & 0x7fff_ffff)
        if streamID == 0 {
            if increment == 0 {
                throw HTTP2ConnectionError(code: .protocolError, reason: "a WINDOW_UPDATE of 0 for the connection")
            }
            connectionSendWindow += increment
            if connectionSendWindow > 0x7fff_ffff {
                throw HTTP2ConnectionError(code: .flowControlError, reason: "the connection's window over 2^31-1")
            }
            resumeBlockedStreams()
            return
        }
        try checkPeerMayUse(streamID, in: "WINDOW_UPDATE")
        guard var stream = streams[streamID] else { return }
        if increment == 0 {
            closeStream(streamID, errorCode: .protocolError, reset: true)
            return
        }
        stream.sendWindow += increment
        if stream.sendWindow > 0x7fff_ffff {
            closeStream(streamID, errorCode: .flowControlError, reset: true)
            return
        }
        if var body = stream.body, stream.sendWindow > 0, connectionSendWindow > 0 {
            stream.body = nil
            if writeBody(&body, streamID: streamID, streamWindow: &stream.sendWindow) {
                stream.isBlocked = false
                blockedStreams.removeAll { $0 == streamID }
            } else {
                stream.body = body
            }
        }
        streams[streamID] = stream
    }

    /// Ends a stream this side still had open and tells the handler (with `errorCode`,
    /// `.noError` for a complete response). With `reset`, the server is told by RST_STREAM; a
    /// stream whose response ended before its body was all sent is reset with NO_ERROR.
    private func closeStream(_ streamID: Int32, errorCode: HTTP2ErrorCode, reset: Bool) {
        guard let stream = streams.removeValue(forKey: streamID) else { return }
        if reset {
            writeResetStream(streamID: streamID, errorCode: errorCode.rawValue)
        } else if stream.body != nil && errorCode == .noError {
            writeResetStream(streamID: streamID, errorCode: HTTP2ErrorCode.noError.rawValue)
        }
        handler.sessionClosedStream(streamID: streamID, errorCode: errorCode.rawValue)
        openWaitingRequests()
    }

    // MARK: Frames

    private func writeFrameHeader(length: Int, type: HTTP2Frame.Kind, flags: UInt8, streamID: Int32) {
        output.writeInteger(UInt32(length) << 8 | UInt32(type.rawValue))
        output.writeInteger(flags)
        output.writeInteger(UInt32(bitPattern: streamID))
    }

    private func writeResetStream(streamID: Int32, errorCode: UInt32) {
        writeFrameHeader(length: 4, type: .resetStream, flags: 0, streamID: streamID)
        output.writeInteger(errorCode)
    }

    private func writeWindowUpdate(streamID: Int32, increment: Int) {
        writeFrameHeader(length: 4, type: .windowUpdate, flags: 0, streamID: streamID)
        output.writeInteger(UInt32(increment))
    }

    private func writeGoAway(errorCode: UInt32, debugData: [UInt8]) {
        guard !goAwaySent else { return }
        goAwaySent = true
        writeFrameHeader(length: 8 + debugData.count, type: .goAway, flags: 0, streamID: 0)
        output.writeInteger(UInt32(0))
        output.writeInteger(errorCode)
        output.writeBytes(debugData)
    }
}

/// HTTP/2's frame types, flags and SETTINGS identifiers (RFC 9113 §6), as the client session
/// reads and writes them.
enum HTTP2Frame {
    enum Kind: UInt8 {
        case data = 0
        case headers, priority, resetStream, settings, pushPromise, ping, goAway, windowUpdate, continuation
    }

    enum Flags {
        static let endStream: UInt8 = 0x1
        static let ack: UInt8 = 0x1
        static let endHeaders: UInt8 = 0x4
        static let padded: UInt8 = 0x8
        static let priority: UInt8 = 0x20
    }

    enum Setting {
        static let headerTableSize: UInt16 = 1
        static let enablePush: UInt16 = 2
        static let maxConcurrentStreams: UInt16 = 3
        static let initialWindowSize: UInt16 = 4
        static let maxFrameSize: UInt16 = 5
    }
}
