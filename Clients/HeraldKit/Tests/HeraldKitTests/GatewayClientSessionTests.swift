import Foundation
import HeraldGatewayProtocol
import Testing

@testable import HeraldKit

/// A seeded random source (SplitMix64), so a test's draws are the same on every run.
struct SeededRandom: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64 = 42) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite("the client's side of the gateway conversation (docs/gateway.md)")
struct GatewayClientSessionTests {
    static let identity = GatewayClientSession.Identity(
        clientKey: "hk_client_test", deviceToken: "ABCD0123", environment: "sandbox", aliasSignature: "v2.1.ff")

    static func frame(_ build: (inout GatewayFrame) -> Void) -> GatewayFrame {
        var frame = GatewayFrame()
        build(&frame)
        return frame
    }

    static let welcome = frame {
        $0.welcome = GatewayWelcome.with {
            $0.version = 1
            $0.heartbeatSeconds = 60
            $0.idleTimeoutSeconds = 150
            $0.connectionID = "c-1"
            $0.ackTimeoutMilliseconds = 2000
        }
    }

    static func error(_ code: GatewayErrorCode, retryAfter: UInt32 = 0) -> GatewayFrame {
        frame {
            $0.error = GatewayError.with {
                $0.code = code.rawValue
                $0.message = "m"
                $0.fatal = code.isFatal
                $0.retryAfterMilliseconds = retryAfter
            }
        }
    }

    static func live(at now: UInt64 = 0) -> GatewayClientSession {
        var session = GatewayClientSession(identity: identity)
        #expect(session.start(now: now) == .connect)
        _ = session.opened(now: now)
        #expect(session.received(welcome, now: now).isEmpty)
        #expect(session.isLive)
        return session
    }

    @Test("connecting sends one hello with the key, the lower-case token, the environment and the signature")
    func hello() throws {
        var session = GatewayClientSession(identity: Self.identity)
        #expect(session.start(now: 0) == .connect)
        #expect(session.start(now: 1) == .nothing, "a second start while connecting does nothing")
        guard case .send(let frame) = session.opened(now: 5), case .hello(let hello)? = frame.kind else {
            Issue.record("no hello")
            return
        }
        #expect(hello.versions == [1])
        #expect(hello.clientKey == "hk_client_test")
        #expect(hello.deviceToken == "abcd0123")
        #expect(hello.environment == "sandbox")
        #expect(hello.aliasSignature == "v2.1.ff")
        #expect(!session.isLive)
        #expect(session.received(Self.welcome, now: 6).isEmpty)
        #expect(session.connectionID == "c-1")
    }

    @Test("a push is acknowledged before it is handed on, with its own delivery number")
    func pushAndAck() {
        var session = Self.live()
        let push = Self.frame {
            $0.push = GatewayPush.with {
                $0.delivery = 7
                $0.pushID = Data(repeating: 1, count: 16)
            }
        }
        let actions = session.received(push, now: 10)
        #expect(actions.count == 2)
        guard case .send(let ack) = actions[0], case .ack(let body)? = ack.kind else {
            Issue.record("the ack is not first: \(actions)")
            return
        }
        #expect(body.delivery == 7)
        guard case .received(let received) = actions[1] else {
            Issue.record("the push is not handed on")
            return
        }
        #expect(received.delivery == 7)
    }

    @Test("a revoke names the push id and the collapse id")
    func revoke() {
        var session = Self.live()
        let id = UUID()
        let bytes = withUnsafeBytes(of: id.uuid) { Data($0) }
        let actions = session.received(
            Self.frame {
                $0.revoke = GatewayRevoke.with {
                    $0.pushID = bytes
                    $0.collapseID = "sale"
                }
            }, now: 1)
        #expect(actions == [.revoke(Revocation(pushID: id, collapseID: "sale"))])
    }

    @Test("a ping after a heartbeat of silence, a pong for the server's ping, a close after the idle timeout")
    func heartbeats() {
        var session = Self.live(at: 0)
        #expect(session.tick(now: 59_999) == .nothing)
        guard case .send(let ping) = session.tick(now: 60_000), case .ping? = ping.kind else {
            Issue.record("no ping after 60 s")
            return
        }
        #expect(session.tick(now: 61_000) == .nothing, "the ping counts as sending")
        let pong = session.received(Self.frame { $0.ping = GatewayPing.with { $0.nonce = 9 } }, now: 100_000)
        guard case .send(let answer)? = pong.first, case .pong(let body)? = answer.kind else {
            Issue.record("no pong")
            return
        }
        #expect(body.nonce == 9)
        #expect(session.tick(now: 249_999) != .close)
        #expect(session.tick(now: 250_000) == .close, "150 s without hearing anything")
    }

    @Test("a welcome that does not come within 30 s closes the connection and backs off")
    func welcomeTimeout() {
        var session = GatewayClientSession(identity: Self.identity)
        _ = session.start(now: 0)
        _ = session.opened(now: 0)
        #expect(session.tick(now: 29_999) == .nothing)
        #expect(session.tick(now: 30_000) == .close)
        var random = SeededRandom()
        guard case .reconnect = session.closed(now: 30_001, random: &random) else {
            Issue.record("no reconnect after a late welcome")
            return
        }
    }

    @Test("a lost connection reconnects after a random wait within 1 s × 2^attempt, back to 1 s once welcomed")
    func backoffGrows() {
        var session = Self.live()
        var random = SystemRandomNumberGenerator()
        var bounds: [UInt64] = []
        for attempt in 0..<8 {
            bounds.append(session.backoff.boundMilliseconds)
            guard case .reconnect(let wait) = session.closed(now: 0, random: &random) else {
                Issue.record("attempt \(attempt) did not reconnect")
                return
            }
            #expect(wait <= bounds.last!)
            #expect(session.tick(now: wait) == .connect)
            _ = session.opened(now: wait)
        }
        #expect(bounds == [1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000])
        #expect(session.received(Self.welcome, now: 0).isEmpty)
        #expect(session.backoff.boundMilliseconds == 1_000)
    }

    @Test("a goaway waits within its bounds, an error at least its retry_after")
    func goawayAndRetryAfter() {
        var session = Self.live()
        let goaway = Self.frame {
            $0.goaway = GatewayGoaway.with {
                $0.reconnectAfterMinMilliseconds = 5_000
                $0.reconnectAfterMaxMilliseconds = 6_000
            }
        }
        #expect(session.received(goaway, now: 0) == [.close])
        var random = SystemRandomNumberGenerator()
        guard case .reconnect(let wait) = session.closed(now: 0, random: &random) else {
            Issue.record("no reconnect after goaway")
            return
        }
        #expect((5_000...6_000).contains(wait))

        var throttled = Self.live()
        #expect(throttled.received(Self.error(.tooManyConnections, retryAfter: 45_000), now: 0) == [.close])
        guard case .reconnect(let later) = throttled.closed(now: 0, random: &random) else {
            Issue.record("no reconnect after too_many_connections")
            return
        }
        #expect(later >= 45_000)
    }

    @Test(
        "errors about the request itself and replaced stop reconnecting",
        arguments: [
            GatewayErrorCode.unknownKey, .unknownDevice, .aliasSignatureRequired, .aliasSignatureInvalid,
            .aliasSignatureExpired, .unsupportedVersion, .replaced,
        ])
    func stops(code: GatewayErrorCode) {
        var session = Self.live()
        #expect(session.received(Self.error(code), now: 0) == [.close])
        var random = SystemRandomNumberGenerator()
        #expect(session.closed(now: 0, random: &random) == .stop(code: code.rawValue, message: "m"))
        #expect(session.stopCode == code.rawValue)
        #expect(session.tick(now: 1_000_000) == .nothing, "nothing more until the app starts it again")
        #expect(session.start(now: 2_000_000) == .connect)
    }

    @Test(
        "errors the client can outwait reconnect",
        arguments: [
            GatewayErrorCode.unavailable, .idleTimeout, .slowReader, .tooManyFailedAuthentications, .helloTimeout,
            .malformedFrame,
        ])
    func reconnects(code: GatewayErrorCode) {
        var session = Self.live()
        _ = session.received(Self.error(code), now: 0)
        var random = SeededRandom()
        guard case .reconnect = session.closed(now: 0, random: &random) else {
            Issue.record("\(code) did not reconnect")
            return
        }
    }

    @Test("an unknown_delivery error is not fatal and changes nothing")
    func unknownDelivery() {
        var session = Self.live()
        #expect(session.received(Self.error(.unknownDelivery), now: 0).isEmpty)
        #expect(session.isLive)
    }

    @Test("the app's stop closes without reconnecting; a stop while waiting cancels the wait")
    func appStops() {
        var session = Self.live()
        #expect(session.stop(now: 0) == .close)
        var random = SystemRandomNumberGenerator()
        #expect(session.closed(now: 0, random: &random) == .nothing)
        #expect(session.tick(now: 10_000_000) == .nothing)

        var waiting = Self.live()
        _ = waiting.closed(now: 0, random: &random)
        #expect(waiting.stop(now: 0) == .nothing)
        #expect(waiting.tick(now: 10_000_000) == .nothing)
    }

    @Test("a frame only a client sends, from the server, closes the connection")
    func unexpectedFrame() {
        var session = Self.live()
        #expect(session.received(Self.frame { $0.ack = GatewayAck.with { $0.delivery = 1 } }, now: 0) == [.close])
    }

    @Test("started again before the socket closed: it connects once the close is in")
    func restartWhileClosing() {
        var session = Self.live()
        #expect(session.stop(now: 0) == .close)
        #expect(session.start(now: 1) == .nothing)
        var random = SeededRandom()
        guard case .reconnect(let wait) = session.closed(now: 2, random: &random) else {
            Issue.record("a restart during the close was lost")
            return
        }
        #expect(session.tick(now: 2 + wait) == .connect)
    }

    @Test("an error frame that arrives while closing does not change why it closes")
    func errorWhileClosing() {
        var session = Self.live()
        #expect(session.stop(now: 0) == .close)
        #expect(session.received(Self.error(.replaced), now: 1).isEmpty)
        var random = SeededRandom()
        #expect(session.closed(now: 2, random: &random) == .nothing, "the app's own stop, not replaced")
        #expect(session.stopCode == nil)
    }

    @Test("a goaway before the welcome is honoured too")
    func goawayBeforeWelcome() {
        var session = GatewayClientSession(identity: Self.identity)
        _ = session.start(now: 0)
        _ = session.opened(now: 0)
        let goaway = Self.frame {
            $0.goaway = GatewayGoaway.with {
                $0.reconnectAfterMinMilliseconds = 7_000
                $0.reconnectAfterMaxMilliseconds = 8_000
            }
        }
        #expect(session.received(goaway, now: 0) == [.close])
        var random = SeededRandom()
        guard case .reconnect(let wait) = session.closed(now: 0, random: &random) else {
            Issue.record("no reconnect")
            return
        }
        #expect((7_000...8_000).contains(wait))
    }

    @Test("a phone that does not acknowledge still hands the push on")
    func silentPhone() {
        var session = Self.live()
        session.acknowledgesPushes = false
        let push = Self.frame { $0.push = GatewayPush.with { $0.delivery = 3 } }
        let actions = session.received(push, now: 0)
        #expect(actions.count == 1)
        guard case .received? = actions.first else {
            Issue.record("not handed on")
            return
        }
    }
}
