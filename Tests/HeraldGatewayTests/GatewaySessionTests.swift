import Foundation
import HeraldGateway
import HeraldGatewayProtocol
import Testing

/// The connection's protocol without a socket: docs/gateway.md's "The conversation", rule by rule.
@Suite("gateway session: the conversation's rules")
struct GatewaySessionTests {
    typealias Session = GatewaySession<String>

    static func frame(_ build: (inout GatewayFrame) -> Void) -> GatewayFrame {
        var frame = GatewayFrame()
        build(&frame)
        return frame
    }

    static func hello(versions: [UInt32] = [1]) -> GatewayFrame {
        frame {
            $0.hello = GatewayHello.with {
                $0.versions = versions
                $0.clientKey = "hk_client_test"
                $0.deviceToken = String(repeating: "ab", count: 32)
                $0.environment = "production"
            }
        }
    }

    static func push(_ id: UInt8) -> GatewayPush {
        GatewayPush.with {
            $0.pushID = Data(repeating: id, count: 16)
            $0.payload = Data(#"{"aps":{"alert":"hi"}}"#.utf8)
        }
    }

    /// The error frame a close sends, and the tickets it hands to APNs.
    static func closed(_ action: Session.Action) -> (code: String, fatal: Bool, fallBack: [String])? {
        guard case .close(let frame, let fallBack) = action, case .error(let error)? = frame.kind else { return nil }
        return (error.code, error.fatal, fallBack)
    }

    /// A session welcomed at time 0.
    static func live(_ rules: Session.Rules = .init()) -> Session {
        var session = Session(rules: rules, now: 0)
        _ = session.received(hello(), now: 0)
        _ = session.authenticated(connectionID: "c1", now: 0)
        return session
    }

    @Test("a hello is looked up, then welcomed with the rules; the highest common version wins")
    func welcome() throws {
        var rules = Session.Rules()
        rules.versions = [1, 2]
        var session = Session(rules: rules, now: 0)
        guard case .authenticate(let hello, let version) = session.received(Self.hello(versions: [3, 2, 1]), now: 5)
        else {
            Issue.record("a hello is looked up")
            return
        }
        #expect(version == 2 && hello.clientKey == "hk_client_test")
        #expect(!session.isLive)
        guard case .send(let frame) = session.authenticated(connectionID: "c1", now: 6),
            case .welcome(let welcome)? = frame.kind
        else {
            Issue.record("the welcome is sent")
            return
        }
        #expect(welcome.version == 2 && welcome.connectionID == "c1")
        #expect(welcome.heartbeatSeconds == 60 && welcome.idleTimeoutSeconds == 150)
        #expect(welcome.ackTimeoutMilliseconds == 2_000 && welcome.maxFrameBytes == 16_384)
        #expect(session.isLive)
    }

    @Test("no version in common: unsupported_version, naming the server's")
    func unsupportedVersion() throws {
        var session = Session(rules: .init(), now: 0)
        let action = session.received(Self.hello(versions: [7]), now: 0)
        guard case .close(let frame, _) = action, case .error(let error)? = frame.kind else {
            Issue.record("closed")
            return
        }
        #expect(error.code == "unsupported_version" && error.fatal && error.supportedVersions == [1])
    }

    @Test("anything but a hello first is hello_required; no hello in 10 s is hello_timeout")
    func helloFirst() {
        var first = Session(rules: .init(), now: 0)
        let ping = Self.frame { $0.ping = GatewayPing.with { $0.nonce = 1 } }
        #expect(Self.closed(first.received(ping, now: 1))?.code == "hello_required")

        var silent = Session(rules: .init(), now: 1_000)
        if case .none = silent.tick(now: 10_999) {} else { Issue.record("not yet") }
        #expect(Self.closed(silent.tick(now: 11_000))?.code == "hello_timeout")
        if case .none = silent.tick(now: 12_000) {} else { Issue.record("closed once") }
    }

    @Test("a refused hello closes with the code and the wait it names")
    func refused() {
        var session = Session(rules: .init(), now: 0)
        _ = session.received(Self.hello(), now: 0)
        let action = session.refused(.tooManyFailedAuthentications, message: "wait", retryAfterMilliseconds: 30_000)
        guard case .close(let frame, _) = action, case .error(let error)? = frame.kind else {
            Issue.record("closed")
            return
        }
        #expect(error.code == "too_many_failed_authentications" && error.retryAfterMilliseconds == 30_000)
    }

    @Test("frames between the hello and the welcome, a second hello, server-only kinds and empty frames are malformed")
    func malformed() {
        var early = Session(rules: .init(), now: 0)
        _ = early.received(Self.hello(), now: 0)
        #expect(Self.closed(early.received(Self.frame { $0.ping = .init() }, now: 1))?.code == "malformed_frame")

        for frame in [Self.hello(), GatewayFrame(), Self.frame { $0.push = Self.push(1) }] {
            var session = Self.live()
            #expect(Self.closed(session.received(frame, now: 1))?.code == "malformed_frame")
        }
        var tooLarge = Self.live()
        #expect(Self.closed(tooLarge.unreadable(.frameTooLarge))?.code == "frame_too_large")
    }

    @Test("a frame of a kind this version does not know (a newer peer's) is ignored")
    func newerKind() throws {
        var session = Self.live()
        // Field 42 of Frame, a message of its own: no kind this version knows.
        let newer = try GatewayFrame(serializedBytes: [0xd2, 0x02, 0x00] as [UInt8])
        #expect(newer.kind == nil)
        if case .none = session.received(newer, now: 1) {} else { Issue.record("ignored") }
        #expect(session.isLive)
    }

    @Test("a ping is answered with a pong of the same nonce")
    func heartbeat() {
        var session = Self.live()
        guard
            case .send(let frame) = session.received(
                Self.frame { $0.ping = GatewayPing.with { $0.nonce = 42 } }, now: 1),
            case .pong(let pong)? = frame.kind
        else {
            Issue.record("a pong")
            return
        }
        #expect(pong.nonce == 42)
    }

    @Test("pushes are numbered; an ack hands its ticket back once; an unknown delivery is a non-fatal error")
    func acknowledgements() {
        var session = Self.live()
        var deliveries: [UInt64] = []
        for (index, ticket) in ["a", "b"].enumerated() {
            guard case .send(let frame) = session.push(Self.push(UInt8(index)), ticket: ticket, now: 10),
                case .push(let push)? = frame.kind
            else {
                Issue.record("a push frame")
                return
            }
            deliveries.append(push.delivery)
        }
        #expect(deliveries == [1, 2])
        #expect(session.unacknowledged == 2)
        let ack = { (delivery: UInt64) in Self.frame { $0.ack = GatewayAck.with { $0.delivery = delivery } } }
        guard case .acknowledged(let ticket) = session.received(ack(2), now: 20) else {
            Issue.record("acked")
            return
        }
        #expect(ticket == "b")
        guard case .send(let frame) = session.received(ack(2), now: 21), case .error(let error)? = frame.kind else {
            Issue.record("unknown delivery")
            return
        }
        #expect(error.code == "unknown_delivery" && !error.fatal)
        #expect(session.isLive && session.unacknowledged == 1)
    }

    @Test("a push not acknowledged within the ack timeout falls back to APNs, once, in delivery order")
    func ackTimeout() {
        var session = Self.live()
        _ = session.push(Self.push(1), ticket: "first", now: 100)
        _ = session.push(Self.push(2), ticket: "second", now: 500)
        if case .none = session.tick(now: 2_099) {} else { Issue.record("not late yet") }
        guard case .fallBack(let late) = session.tick(now: 2_600) else {
            Issue.record("late")
            return
        }
        #expect(late == ["first", "second"])
        if case .none = session.tick(now: 3_000) {} else { Issue.record("each falls back once") }
        // A late ack of a push that fell back is unknown now (APNs has it).
        let ack = Self.frame { $0.ack = GatewayAck.with { $0.delivery = 1 } }
        if case .send = session.received(ack, now: 3_001) {} else { Issue.record("unknown_delivery") }
    }

    @Test("past the unacknowledged bound the connection closes as a slow reader, every waiting push to APNs")
    func slowReader() {
        var rules = Session.Rules()
        rules.maximumUnacknowledged = 2
        var session = Self.live(rules)
        _ = session.push(Self.push(1), ticket: "1", now: 0)
        _ = session.push(Self.push(2), ticket: "2", now: 0)
        let closed = Self.closed(session.push(Self.push(3), ticket: "3", now: 0))
        #expect(closed?.code == "slow_reader" && closed?.fallBack == ["1", "2", "3"])
        #expect(!session.isLive)
        guard case .fallBack(let tickets) = session.push(Self.push(4), ticket: "4", now: 1) else {
            Issue.record("a closed session sends nothing")
            return
        }
        #expect(tickets == ["4"])
    }

    @Test("nothing heard for the idle timeout closes; any frame counts as heard")
    func idle() {
        var session = Self.live()
        _ = session.received(Self.frame { $0.pong = .init() }, now: 100_000)
        if case .none = session.tick(now: 249_999) {} else { Issue.record("heard at 100 s") }
        #expect(Self.closed(session.tick(now: 250_000))?.code == "idle_timeout")
    }

    @Test("the next deadline: the hello's, none while it is looked up, then the idle timeout or the first ack's")
    func nextDeadline() {
        var session = Session(rules: .init(), now: 1_000)
        #expect(session.nextDeadline == 11_000)
        _ = session.received(Self.hello(), now: 2_000)
        #expect(session.nextDeadline == nil)
        _ = session.authenticated(connectionID: "c1", now: 3_000)
        #expect(session.nextDeadline == 153_000)
        _ = session.push(Self.push(1), ticket: "first", now: 4_000)
        _ = session.push(Self.push(2), ticket: "second", now: 5_000)
        #expect(session.nextDeadline == 6_000)
        // A tick before the next deadline has nothing to do: the sweep need not visit earlier.
        if case .none = session.tick(now: 5_999) {} else { Issue.record("nothing due before 6 s") }
        _ = session.received(Self.frame { $0.ack = GatewayAck.with { $0.delivery = 1 } }, now: 5_500)
        #expect(session.nextDeadline == 7_000)
        _ = session.received(Self.frame { $0.ack = GatewayAck.with { $0.delivery = 2 } }, now: 5_600)
        #expect(session.nextDeadline == 155_600)
        _ = session.connectionClosed()
        #expect(session.nextDeadline == nil)
    }

    @Test("a connection that drops hands its unacknowledged pushes to APNs")
    func dropped() {
        var session = Self.live()
        _ = session.push(Self.push(1), ticket: "x", now: 0)
        #expect(session.connectionClosed() == ["x"])
        #expect(session.connectionClosed().isEmpty)
    }
}

/// The length before each frame.
@Suite("gateway framing")
struct FrameLengthTests {
    @Test("lengths of 0 and past the limit are refused; GET opens a WebSocket")
    func lengths() {
        #expect(FrameLength.verdict(0, maximum: 100) == .refuse(.malformedFrame))
        #expect(FrameLength.verdict(101, maximum: 100) == .refuse(.frameTooLarge))
        #expect(FrameLength.verdict(100, maximum: 100) == .frame(100))
        #expect(FrameLength.prefix(4) == [0, 0, 0, 4])
        #expect(FrameLength.prefix(0x0102_0304) == [1, 2, 3, 4])
        #expect(FrameLength.opensWebSocket(Array("GET ".utf8)))
        #expect(!FrameLength.opensWebSocket([0, 0, 0, 4]))
    }

    @Test("docs/gateway.md's example ping is the bytes the codec writes")
    func examplePing() throws {
        var ping = GatewayFrame()
        ping.ping = GatewayPing.with { $0.nonce = 1 }
        let body = try [UInt8](ping.serializedData())
        #expect(FrameLength.prefix(body.count) + body == [0x00, 0x00, 0x00, 0x04, 0x1a, 0x02, 0x08, 0x01])
    }

    @Test("docs/gateway.md's error table lists exactly GatewayErrorCode's cases")
    func errorTable() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let page = try String(contentsOf: root.appending(path: "docs/gateway.md"), encoding: .utf8)
        let table = try #require(page.range(of: "| code | fatal |"))
        let end = try #require(page.range(of: "\n\n", range: table.upperBound..<page.endIndex))
        var listed: [String: Bool] = [:]
        for row in page[table.upperBound..<end.lowerBound].split(separator: "\n").dropFirst(2) {
            let cells = row.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 2 else { continue }
            for code in cells[0].split(separator: ",") {
                listed[code.trimmingCharacters(in: CharacterSet(charactersIn: " `"))] = cells[1] == "yes"
            }
        }
        #expect(Set(listed.keys) == Set(GatewayErrorCode.allCases.map(\.rawValue)))
        for code in GatewayErrorCode.allCases { #expect(listed[code.rawValue] == code.isFatal, "\(code)") }
    }
}
