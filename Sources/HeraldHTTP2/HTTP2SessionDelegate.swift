/// What an HTTP/2 session parsed, handed to the connection that owns the session: apns-sim's
/// server connections (``NGHTTP2Session``) and the client's handler (``HTTP2ClientSession``).
///
/// Every method is called synchronously from inside the session's own calls (receiving bytes,
/// submitting or draining frames), so on the owning connection's event loop. The raw buffers
/// are only valid for the duration of the call.
protocol HTTP2SessionDelegate: AnyObject {
    func sessionBeganHeaders(streamID: Int32)
    func sessionReceivedHeader(streamID: Int32, name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)
    func sessionReceivedData(streamID: Int32, bytes: UnsafeRawBufferPointer)
    func sessionReceivedFrame(_ frame: HTTP2ReceivedFrame)
    func sessionClosedStream(streamID: Int32, errorCode: UInt32)
}

/// A frame an HTTP/2 session finished receiving, reduced to what Herald's connections act on.
enum HTTP2ReceivedFrame {
    case headers(streamID: Int32, endStream: Bool)
    case data(streamID: Int32, endStream: Bool)
    case settings(ack: Bool)
    case ping(ack: Bool, opaqueData: UInt64)
    case goAway(lastStreamID: Int32, errorCode: UInt32, debugData: [UInt8])
    case resetStream(streamID: Int32, errorCode: UInt32)
    case other
}
