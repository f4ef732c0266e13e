import HeraldGatewayProtocol
import NIOCore

/// Reads docs/gateway.md's framing: a 4-byte big-endian length, then that many bytes of a
/// `Frame`. A refused length or bytes that are not a `Frame` are reported once as
/// ``GatewayInbound/unreadable(_:)``; everything after is dropped unread, since no later frame
/// boundary can be trusted (the connection is closing).
struct GatewayFrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = GatewayInbound

    let maximumFrameBytes: Int
    private var failed = false
    /// Frames read: the first (the hello) is held to 16,384 bytes, the limit before the welcome
    /// (docs/gateway.md); the connection's own limit applies after.
    private var framesRead = 0

    init(maximumFrameBytes: Int) {
        self.maximumFrameBytes = maximumFrameBytes
    }

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard !failed else {
            buffer.moveReaderIndex(to: buffer.writerIndex)
            return .needMoreData
        }
        guard let length = buffer.getInteger(at: buffer.readerIndex, as: UInt32.self) else { return .needMoreData }
        let limit = framesRead == 0 ? min(FrameLength.defaultMaximum, maximumFrameBytes) : maximumFrameBytes
        switch FrameLength.verdict(length, maximum: limit) {
        case .refuse(let code):
            return fail(code, context: context, buffer: &buffer)
        case .frame(let count):
            guard buffer.readableBytes >= 4 + count else { return .needMoreData }
            buffer.moveReaderIndex(forwardBy: 4)
            let bytes = buffer.readBytes(length: count)!
            guard let frame = try? GatewayFrame(serializedBytes: bytes) else {
                return fail(.malformedFrame, context: context, buffer: &buffer)
            }
            framesRead += 1
            context.fireChannelRead(wrapInboundOut(.frame(frame)))
            return .continue
        }
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws
        -> DecodingState
    {
        // A frame cut off by the peer's close is not read: nobody is left to answer.
        while try decode(context: context, buffer: &buffer) == .continue {}
        buffer.moveReaderIndex(to: buffer.writerIndex)
        return .needMoreData
    }

    private mutating func fail(_ code: GatewayErrorCode, context: ChannelHandlerContext, buffer: inout ByteBuffer)
        -> DecodingState
    {
        failed = true
        buffer.moveReaderIndex(to: buffer.writerIndex)
        context.fireChannelRead(wrapInboundOut(.unreadable(code)))
        return .needMoreData
    }
}

/// Writes a frame as its 4-byte length and its bytes.
struct GatewayFrameEncoder: MessageToByteEncoder {
    typealias OutboundIn = GatewayFrame

    func encode(data frame: GatewayFrame, out: inout ByteBuffer) throws {
        let bytes: [UInt8] = try frame.serializedBytes()
        out.reserveCapacity(minimumWritableBytes: 4 + bytes.count)
        out.writeInteger(UInt32(bytes.count))
        out.writeBytes(bytes)
    }
}
