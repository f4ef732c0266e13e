import HeraldGatewayProtocol
import NIOCore
import NIOEmbedded
import Testing

@testable import HeraldGateway

@Suite("the gateway's framing on the wire")
struct FrameCodecTests {
    private static func ping(_ nonce: UInt64) -> GatewayFrame {
        var frame = GatewayFrame()
        frame.ping = GatewayPing.with { $0.nonce = nonce }
        return frame
    }

    private static func decoded(_ chunks: [[UInt8]], maximum: Int = 64) throws -> [GatewayInbound] {
        let channel = EmbeddedChannel(
            handler: ByteToMessageHandler(GatewayFrameDecoder(maximumFrameBytes: maximum)))
        for chunk in chunks { try channel.writeInbound(ByteBuffer(bytes: chunk)) }
        var read: [GatewayInbound] = []
        while let inbound = try channel.readInbound(as: GatewayInbound.self) { read.append(inbound) }
        _ = try? channel.finish()
        return read
    }

    private static func nonces(_ inbound: [GatewayInbound]) -> [UInt64?] {
        inbound.map {
            if case .frame(let frame) = $0, case .ping(let ping)? = frame.kind { ping.nonce } else { nil }
        }
    }

    @Test("the page's example, a ping with nonce 1, is 00 00 00 04 1a 02 08 01 both ways")
    func pageExample() throws {
        let channel = EmbeddedChannel(handler: MessageToByteHandler(GatewayFrameEncoder()))
        try channel.writeOutbound(Self.ping(1))
        let written = try #require(try channel.readOutbound(as: ByteBuffer.self))
        #expect(Array(written.readableBytesView) == [0, 0, 0, 4, 0x1a, 0x02, 0x08, 0x01])
        #expect(Self.nonces(try Self.decoded([[0, 0, 0, 4, 0x1a, 0x02, 0x08, 0x01]])) == [1])
    }

    @Test("a frame split over many reads, and several frames in one read, decode in order")
    func splitsAndJoins() throws {
        let one: [UInt8] = [0, 0, 0, 4, 0x1a, 0x02, 0x08, 0x01]
        let two: [UInt8] = [0, 0, 0, 4, 0x1a, 0x02, 0x08, 0x02]
        #expect(Self.nonces(try Self.decoded(one.map { [$0] })) == [1])
        #expect(Self.nonces(try Self.decoded([one + two + one])) == [1, 2, 1])
        #expect(Self.nonces(try Self.decoded([Array(one.prefix(6)), Array(one.suffix(2)) + two])) == [1, 2])
    }

    @Test("a length of 0 is malformed_frame, past the maximum frame_too_large, and nothing after is read")
    func refusedLengths() throws {
        let after: [UInt8] = [0, 0, 0, 4, 0x1a, 0x02, 0x08, 0x01]
        let zero = try Self.decoded([[0, 0, 0, 0] + after])
        #expect(zero.count == 1)
        guard case .unreadable(.malformedFrame) = zero.first else {
            Issue.record("\(zero)")
            return
        }
        let large = try Self.decoded([[0, 0, 0, 65] + after], maximum: 64)
        #expect(large.count == 1)
        guard case .unreadable(.frameTooLarge) = large.first else {
            Issue.record("\(large)")
            return
        }
        // `GET ` read as a length: far past any frame.
        let get = try Self.decoded([Array("GET / HTTP/1.1\r\n".utf8)])
        guard case .unreadable(.frameTooLarge) = get.first else {
            Issue.record("\(get)")
            return
        }
    }

    @Test("bytes that are not a Frame are malformed_frame")
    func garbage() throws {
        // Field 1 as a length-delimited field claiming 100 bytes, with 2 present.
        let read = try Self.decoded([[0, 0, 0, 4, 0x0a, 0x64, 0x01, 0x02]])
        guard case .unreadable(.malformedFrame) = read.first else {
            Issue.record("\(read)")
            return
        }
        #expect(read.count == 1)
    }

    @Test("a hello's token is hexadecimal of either case, an even number of digits")
    func tokens() {
        #expect(GatewayAuthenticator.tokenBytes("0aFF") == [0x0a, 0xff])
        #expect(GatewayAuthenticator.tokenBytes("") == nil)
        #expect(GatewayAuthenticator.tokenBytes("abc") == nil)
        #expect(GatewayAuthenticator.tokenBytes("zz") == nil)
        #expect(GatewayAuthenticator.tokenBytes(" 0a") == nil)
    }
}
