/// The 4-byte big-endian length before each frame on a TLS connection (docs/gateway.md,
/// "Framing"): what a reader may accept, and the prefix a writer puts down.
public enum FrameLength {
    /// The largest frame before the welcome names the connection's own limit.
    public static let defaultMaximum = 16_384

    /// What a reader does with a length it read.
    public enum Verdict: Equatable, Sendable {
        /// Read this many bytes of frame next.
        case frame(Int)
        /// Close with this error: nothing after the length can be trusted.
        case refuse(GatewayErrorCode)
    }

    /// Judges `length` against `maximum`.
    public static func verdict(_ length: UInt32, maximum: Int) -> Verdict {
        if length == 0 { return .refuse(.malformedFrame) }
        if length > maximum { return .refuse(.frameTooLarge) }
        return .frame(Int(length))
    }

    /// Whether `bytes` (the first four of a connection) open a WebSocket upgrade rather than a
    /// frame: `GET ` read as a length is 1,195,725,856, past any frame.
    public static func opensWebSocket<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> Bool {
        bytes.elementsEqual("GET ".utf8)
    }

    /// The prefix of a frame of `count` bytes.
    public static func prefix(_ count: Int) -> [UInt8] {
        let length = UInt32(count)
        return [
            UInt8(length >> 24), UInt8(truncatingIfNeeded: length >> 16), UInt8(truncatingIfNeeded: length >> 8),
            UInt8(truncatingIfNeeded: length),
        ]
    }
}
