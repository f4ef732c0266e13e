import HeraldGatewayProtocol
import NIOCore

/// Reads the gateway's framing on the client's side (docs/gateway.md, "Framing"): a 4-byte
/// big-endian length, then that many bytes of a `Frame`. A length past `maximumFrameBytes` or
/// bytes that are not a `Frame` fail the channel: nothing after them can be trusted.
struct GatewayFrameReader: ByteToMessageDecoder {
    typealias InboundOut = GatewayFrame

    struct Unreadable: Error, CustomStringConvertible {
        var code: GatewayErrorCode
        var description: String { "the gateway sent bytes that are not a frame (\(code.rawValue))" }
    }

    var maximumFrameBytes: Int

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let length = buffer.getInteger(at: buffer.readerIndex, as: UInt32.self) else { return .needMoreData }
        switch FrameLength.verdict(length, maximum: maximumFrameBytes) {
        case .refuse(let code):
            throw Unreadable(code: code)
        case .frame(let count):
            guard buffer.readableBytes >= 4 + count else { return .needMoreData }
            buffer.moveReaderIndex(forwardBy: 4)
            guard let frame = try? GatewayFrame(serializedBytes: buffer.readBytes(length: count)!) else {
                throw Unreadable(code: .malformedFrame)
            }
            context.fireChannelRead(wrapInboundOut(frame))
            return .continue
        }
    }
}

/// Writes a frame as its 4-byte length and its bytes.
struct GatewayFrameWriter: MessageToByteEncoder {
    typealias OutboundIn = GatewayFrame

    func encode(data frame: GatewayFrame, out: inout ByteBuffer) throws {
        let bytes: [UInt8] = try frame.serializedBytes()
        out.writeBytes(FrameLength.prefix(bytes.count))
        out.writeBytes(bytes)
    }
}
