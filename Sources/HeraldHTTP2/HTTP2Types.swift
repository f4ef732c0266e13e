import NIOCore

/// An HTTP/2 error code (RFC 9113 §7), as carried by RST_STREAM and GOAWAY.
public struct HTTP2ErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let noError = HTTP2ErrorCode(rawValue: 0x0)
    public static let protocolError = HTTP2ErrorCode(rawValue: 0x1)
    public static let internalError = HTTP2ErrorCode(rawValue: 0x2)
    public static let flowControlError = HTTP2ErrorCode(rawValue: 0x3)
    public static let settingsTimeout = HTTP2ErrorCode(rawValue: 0x4)
    public static let streamClosed = HTTP2ErrorCode(rawValue: 0x5)
    public static let frameSizeError = HTTP2ErrorCode(rawValue: 0x6)
    public static let refusedStream = HTTP2ErrorCode(rawValue: 0x7)
    public static let cancel = HTTP2ErrorCode(rawValue: 0x8)
    public static let compressionError = HTTP2ErrorCode(rawValue: 0x9)
    public static let connectError = HTTP2ErrorCode(rawValue: 0xa)
    public static let enhanceYourCalm = HTTP2ErrorCode(rawValue: 0xb)
    public static let inadequateSecurity = HTTP2ErrorCode(rawValue: 0xc)
    public static let http11Required = HTTP2ErrorCode(rawValue: 0xd)

    public var description: String {
        let names = [
            "NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR", "SETTINGS_TIMEOUT",
            "STREAM_CLOSED", "FRAME_SIZE_ERROR", "REFUSED_STREAM", "CANCEL", "COMPRESSION_ERROR",
            "CONNECT_ERROR", "ENHANCE_YOUR_CALM", "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED",
        ]
        return rawValue < names.count ? names[Int(rawValue)] : "0x\(String(rawValue, radix: 16))"
    }
}

/// A GOAWAY frame received from the peer.
public struct HTTP2GoAway: Sendable, Hashable {
    /// Streams above this id were never processed by the peer and may be sent again elsewhere.
    public var lastStreamID: Int32
    public var errorCode: HTTP2ErrorCode
    /// The frame's debug data (Apple puts a JSON reason there).
    public var debugData: [UInt8]

    public var debugText: String { String(decoding: debugData, as: UTF8.self) }
}

/// Why a request on an HTTP/2 connection did not get a response.
public struct HTTP2Error: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        /// The peer reset the stream (RST_STREAM) with this code.
        case streamReset(HTTP2ErrorCode)
        /// The peer sent GOAWAY; the stream was above its last-stream-id, or the connection was
        /// already going away when the request was submitted.
        case goAway(HTTP2GoAway)
        /// The request's deadline passed before the response was complete; the stream was
        /// reset with CANCEL.
        case deadlineExceeded
        /// The connection closed (socket error, TLS failure, peer hung up) before a response.
        case connectionClosed
        /// The peer did not agree to speak HTTP/2 (TLS ALPN selected something else).
        case http2NotNegotiated(String?)
        /// nghttp2 refused what was submitted or received (a protocol error).
        case protocolError(String)
        /// The calling task was cancelled; the stream was reset with CANCEL.
        case cancelled
    }

    public var kind: Kind
    /// True when the peer certainly did not process the request (REFUSED_STREAM, a stream above
    /// GOAWAY's last-stream-id, or never sent): it is safe to send it again.
    public var requestWasNotProcessed: Bool

    public init(_ kind: Kind, requestWasNotProcessed: Bool) {
        self.kind = kind
        self.requestWasNotProcessed = requestWasNotProcessed
    }

    public var description: String {
        let processed = requestWasNotProcessed ? " (not processed by the server; safe to send again)" : ""
        switch kind {
        case .streamReset(let code): return "HTTP/2 stream reset by the server: \(code)\(processed)"
        case .goAway(let goAway):
            return "HTTP/2 connection going away: GOAWAY \(goAway.errorCode), last stream \(goAway.lastStreamID)"
                + (goAway.debugData.isEmpty ? "" : ", \(goAway.debugText)") + processed
        case .deadlineExceeded: return "HTTP/2 request deadline passed before a response arrived"
        case .connectionClosed: return "HTTP/2 connection closed before a response arrived\(processed)"
        case .http2NotNegotiated(let protocolName):
            return
                "the server did not negotiate HTTP/2 over TLS (ALPN chose \(protocolName ?? "nothing")); is it an HTTP/2 server?"
        case .protocolError(let text): return "HTTP/2 protocol error: \(text)"
        case .cancelled: return "HTTP/2 request cancelled by its caller"
        }
    }
}

/// A request to send on an ``HTTP2ClientConnection``.
public struct HTTP2Request: Sendable {
    public var method: String
    public var path: String
    /// The `:authority` pseudo-header (host[:port]).
    public var authority: String
    public var scheme: String
    /// Regular header fields (not pseudo-headers), lower-case names.
    public var headers: [HTTP2HeaderField]
    public var body: ByteBuffer?
    /// Send `:path` as never-indexed (Apple asks for it: device tokens should not linger in
    /// HPACK tables).
    public var pathNeverIndexed: Bool

    public init(
        method: String = "POST", path: String, authority: String, scheme: String = "https",
        headers: [HTTP2HeaderField] = [], body: ByteBuffer? = nil,
        pathNeverIndexed: Bool = true
    ) {
        self.method = method
        self.path = path
        self.authority = authority
        self.scheme = scheme
        self.headers = headers
        self.body = body
        self.pathNeverIndexed = pathNeverIndexed
    }

    /// Writes the request's header block: the pseudo-headers, then `headers`.
    func write(into block: inout HTTP2HeaderBlock) {
        block.addRequestPseudoHeaders(
            method: method, scheme: scheme, authority: authority, path: path, pathNeverIndexed: pathNeverIndexed)
        block.add(contentsOf: headers)
    }
}

/// Told of each response to ``HTTP2ClientConnection/submit(_:timeout:compose:onResponse:)``: the
/// request's tag and its response, or the ``HTTP2Error`` that ended it. Called on the
/// connection's event loop.
public typealias HTTP2ResponseHandler = @Sendable (_ tag: Int, _ result: Result<HTTP2Response, any Error>) -> Void

/// A complete response received on an ``HTTP2ClientConnection``.
public struct HTTP2Response: Sendable {
    /// The `:status` pseudo-header.
    public var status: Int
    /// Every header field, `:status` included.
    public var headers: HTTP2HeaderFields
    public var body: ByteBuffer
}

/// Something that happened to a client connection as a whole.
public enum HTTP2ConnectionEvent: Sendable, Hashable {
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS changed (or arrived for the first time).
    case maxConcurrentStreamsChanged(Int)
    /// The server sent GOAWAY: no new streams; those above `lastStreamID` were not processed.
    case goAway(HTTP2GoAway)
    /// The connection is closed.
    case closed
}
