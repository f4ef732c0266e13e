import NIOCore
import Testing

@testable import HeraldHTTP2

/// The client's HTTP/2 session driven frame by frame, without a socket: what it sends for each
/// request, and what it tells its owner of each frame a server sends.
@Suite("HTTP/2 client session, frame by frame")
struct HTTP2ClientSessionTests {
    /// Writes down what the session tells its owner.
    final class Recorder: HTTP2SessionDelegate {
        var events: [String] = []

        func sessionBeganHeaders(streamID: Int32) { events.append("headers \(streamID)") }
        func sessionReceivedHeader(streamID: Int32, name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
            events.append("\(String(decoding: name, as: UTF8.self)): \(String(decoding: value, as: UTF8.self))")
        }
        func sessionReceivedData(streamID: Int32, bytes: UnsafeRawBufferPointer) {
            events.append("data \(streamID) \(String(decoding: bytes, as: UTF8.self))")
        }
        func sessionReceivedFrame(_ frame: HTTP2ReceivedFrame) {
            switch frame {
            case .settings: events.append("settings")
            case .ping(let ack, let opaque): events.append("ping ack=\(ack) \(opaque)")
            case .goAway(let last, let code, _): events.append("goaway \(last) \(code)")
            default: events.append("other")
            }
        }
        func sessionClosedStream(streamID: Int32, errorCode: UInt32) {
            events.append("closed \(streamID) \(errorCode)")
        }
    }

    /// A frame as the session wrote it.
    struct Frame: Equatable, CustomStringConvertible {
        var kind: UInt8
        var flags: UInt8
        var streamID: Int32
        var payload: [UInt8]
        var description: String { "\(kind)/\(flags)/\(streamID)/\(payload.count)" }
    }

    static func frame(_ kind: HTTP2Frame.Kind, flags: UInt8 = 0, stream: Int32 = 0, _ payload: [UInt8] = [])
        -> [UInt8]
    {
        let length = payload.count
        return [UInt8(length >> 16), UInt8(length >> 8 & 0xff), UInt8(length & 0xff), kind.rawValue, flags]
            + withUnsafeBytes(of: UInt32(bitPattern: stream).bigEndian, Array.init) + payload
    }

    static func settings(_ values: [(UInt16, UInt32)]) -> [UInt8] {
        frame(
            .settings,
            values.flatMap {
                withUnsafeBytes(of: $0.0.bigEndian, Array.init) + withUnsafeBytes(of: $0.1.bigEndian, Array.init)
            })
    }

    static func word(_ value: UInt32) -> [UInt8] { withUnsafeBytes(of: value.bigEndian, Array.init) }

    /// The session with the server's first SETTINGS read, and what it sent so far dropped. The
    /// session holds its owner unretained (as a connection's handler owns its session): every
    /// test keeps the recorder alive until it ends (`withExtendedLifetime`), or the session
    /// would call into a freed object.
    static func connected(_ settings: [(UInt16, UInt32)] = [(3, 100)]) throws -> (
        HTTP2ClientSession<Recorder>, Recorder
    ) {
        let recorder = Recorder()
        let session = try HTTP2ClientSession(
            handler: recorder, allocator: ByteBufferAllocator(), maxConcurrentStreams: 100)
        _ = session.takeOutput()
        try session.receive(ByteBuffer(bytes: Self.settings(settings)))
        _ = session.takeOutput()
        recorder.events.removeAll()
        return (session, recorder)
    }

    /// The frames the session has written since last asked.
    static func sent(_ session: HTTP2ClientSession<Recorder>) -> [Frame] {
        guard var bytes = session.takeOutput() else { return [] }
        var frames: [Frame] = []
        while bytes.readableBytes >= 9 {
            let high = Int(bytes.readInteger(as: UInt16.self)!)
            let length = high << 8 | Int(bytes.readInteger(as: UInt8.self)!)
            let kind = bytes.readInteger(as: UInt8.self)!
            let flags = bytes.readInteger(as: UInt8.self)!
            let stream = Int32(bitPattern: bytes.readInteger(as: UInt32.self)!)
            frames.append(Frame(kind: kind, flags: flags, streamID: stream, payload: bytes.readBytes(length: length)!))
        }
        return frames
    }

    static func request(_ path: String) -> HTTP2HeaderBlock {
        var block = HTTP2HeaderBlock()
        block.addRequestPseudoHeaders(
            method: "POST", scheme: "https", authority: "apns.example", path: path, pathNeverIndexed: true)
        return block
    }

    @Test("it opens with the preface, its SETTINGS and a wider connection window, and acknowledges the server's")
    func preface() throws {
        let recorder = Recorder()
        defer { withExtendedLifetime(recorder) {} }
        let session = try HTTP2ClientSession(
            handler: recorder, allocator: ByteBufferAllocator(), maxConcurrentStreams: 100)
        var opening = try #require(session.takeOutput())
        #expect(opening.readString(length: 24) == "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        // SETTINGS: no push, 100 streams, a 1 MiB window per stream.
        #expect(
            opening.readBytes(length: 27)
                == [0, 0, 18, 4, 0, 0, 0, 0, 0] + [0, 2, 0, 0, 0, 0, 0, 3, 0, 0, 0, 100, 0, 4, 0, 16, 0, 0])
        // WINDOW_UPDATE on the connection, from 64 KiB to 16 MiB.
        #expect(opening.readBytes(length: 13) == [0, 0, 4, 8, 0, 0, 0, 0, 0] + Self.word((1 << 24) - 65_535))
        #expect(opening.readableBytes == 0)

        try session.receive(ByteBuffer(bytes: Self.settings([(3, 7)])))
        #expect(Self.sent(session) == [Frame(kind: 4, flags: 1, streamID: 0, payload: [])])
        #expect(session.remoteMaxConcurrentStreams == 7)
        #expect(recorder.events == ["settings"])
    }

    @Test("a request goes out as HEADERS and DATA; its response, cut into pieces, ends the stream")
    func requestAndResponse() throws {
        let (session, recorder) = try Self.connected()
        defer { withExtendedLifetime(recorder) {} }
        let streamID = try session.submitRequest(Self.request("/3/device/ab"), body: ByteBuffer(string: "{\"aps\":{}}"))
        #expect(streamID == 1)
        let frames = Self.sent(session)
        #expect(frames.map(\.kind) == [1, 0])
        #expect(frames[0].flags == 0x4)  // END_HEADERS, not END_STREAM: a body follows
        #expect(frames[1].flags == 0x1 && frames[1].payload == Array("{\"aps\":{}}".utf8))

        // HEADERS without END_HEADERS, then CONTINUATION; padded DATA with END_STREAM; each byte
        // delivered on its own, as a socket may.
        let block: [UInt8] = [0x88, 0x40, 7] + Array("apns-id".utf8) + [3] + Array("abc".utf8)
        let response =
            Self.frame(.headers, stream: 1, Array(block[..<4]))
            + Self.frame(.continuation, flags: 0x4, stream: 1, Array(block[4...]))
            + Self.frame(.data, flags: 0x1 | 0x8, stream: 1, [2] + Array("ok".utf8) + [0, 0])
        for byte in response { try session.receive(ByteBuffer(bytes: [byte])) }
        #expect(recorder.events == ["headers 1", ":status: 200", "apns-id: abc", "data 1 ok", "closed 1 0"])
    }

    @Test("over the server's stream limit requests wait and go out in order; a GOAWAY ends those it never saw")
    func streamLimitAndGoAway() throws {
        let (session, recorder) = try Self.connected([(3, 1)])
        defer { withExtendedLifetime(recorder) {} }
        #expect(try (0..<3).map { try session.submitRequest(Self.request("/\($0)"), body: nil) } == [1, 3, 5])
        #expect(Self.sent(session).map(\.streamID) == [1])
        try session.receive(ByteBuffer(bytes: Self.frame(.headers, flags: 0x5, stream: 1, [0x88])))
        #expect(Self.sent(session).map(\.streamID) == [3])
        try session.receive(
            ByteBuffer(bytes: Self.frame(.goAway, Self.word(3) + Self.word(0) + Array("bye".utf8))))
        #expect(recorder.events.suffix(2) == ["goaway 3 0", "closed 5 7"])
        #expect(!session.isAcceptingRequests && !session.isFinished)
        try session.receive(ByteBuffer(bytes: Self.frame(.headers, flags: 0x5, stream: 3, [0x88])))
        #expect(recorder.events.last == "closed 3 0")
        #expect(session.isFinished)
    }

    @Test("a body waits for the windows: a zero initial window, a stream's WINDOW_UPDATE, then SETTINGS raising it")
    func flowControl() throws {
        let (session, recorder) = try Self.connected([(3, 100), (4, 0)])
        defer { withExtendedLifetime(recorder) {} }
        _ = try session.submitRequest(Self.request("/a"), body: ByteBuffer(repeating: 0x61, count: 100))
        #expect(Self.sent(session).map(\.kind) == [1])
        try session.receive(ByteBuffer(bytes: Self.frame(.windowUpdate, stream: 1, Self.word(60))))
        let first = Self.sent(session)
        #expect(first.map(\.payload.count) == [60] && first[0].flags == 0)
        try session.receive(ByteBuffer(bytes: Self.settings([(4, 40)])))
        let rest = Self.sent(session)
        #expect(rest.map(\.kind) == [4, 0])  // the acknowledgement, then the rest of the body
        #expect(rest[1].payload.count == 40 && rest[1].flags == 0x1)
    }

    @Test("PING is answered with the same bytes; an answer to this side's PING reaches the owner")
    func ping() throws {
        let (session, recorder) = try Self.connected()
        defer { withExtendedLifetime(recorder) {} }
        try session.receive(ByteBuffer(bytes: Self.frame(.ping, stream: 0, Array(1...8))))
        #expect(Self.sent(session) == [Frame(kind: 6, flags: 1, streamID: 0, payload: Array(1...8))])
        session.submitPing(opaqueData: 42)
        let ping = try #require(Self.sent(session).first)
        try session.receive(ByteBuffer(bytes: Self.frame(.ping, flags: 1, stream: 0, ping.payload)))
        #expect(recorder.events == ["ping ack=true 42"])
    }

    @Test(
        "malformed frames end the connection with a GOAWAY naming the error, and nothing after is read",
        arguments: [
            (HTTP2ClientSessionTests.frame(.ping, stream: 0, [1, 2, 3]), HTTP2ErrorCode.frameSizeError),
            (HTTP2ClientSessionTests.frame(.data, stream: 2, [1]), .protocolError),
            (HTTP2ClientSessionTests.frame(.pushPromise, stream: 1, [0, 0, 0, 2]), .protocolError),
            (HTTP2ClientSessionTests.frame(.windowUpdate, stream: 0, [0, 0, 0, 0]), .protocolError),
            (
                HTTP2ClientSessionTests.frame(.headers, flags: 0x4, stream: 1, [0xff, 0xff, 0xff, 0xff, 0x0f]),
                .compressionError
            ),
            (Array(repeating: 0xff, count: 9), .frameSizeError),
        ])
    func malformed(bytes: [UInt8], code: HTTP2ErrorCode) throws {
        let (session, recorder) = try Self.connected()
        defer { withExtendedLifetime(recorder) {} }
        _ = try session.submitRequest(Self.request("/a"), body: nil)
        _ = Self.sent(session)
        #expect(throws: (any Error).self) { try session.receive(ByteBuffer(bytes: bytes)) }
        let goAway = try #require(Self.sent(session).first)
        #expect(goAway.kind == 7)
        #expect(Array(goAway.payload[4..<8]) == Self.word(code.rawValue))
        let before = recorder.events
        try session.receive(ByteBuffer(bytes: Self.frame(.headers, flags: 0x5, stream: 1, [0x88])))
        #expect(recorder.events == before)
        #expect(!session.isAcceptingRequests)
    }
}
