import HeraldGatewayProtocol

/// What a transport (framed TLS or WebSocket) hands the connection: a frame, or the verdict on
/// bytes that were not one.
enum GatewayInbound {
    case frame(GatewayFrame)
    /// Bytes that cannot be read as a frame (`malformed_frame`, `frame_too_large`): the
    /// connection ends with this error.
    case unreadable(GatewayErrorCode)
}
