import Foundation
import HeraldGatewayProtocol

/// The client's side of one device's long connection (docs/gateway.md, "The conversation" and
/// "Reconnecting") as a state machine: the shell (``GatewayConnection``) tells it what happened —
/// the socket opened, a frame arrived, the coarse clock ticked, the socket closed — and does what
/// the returned ``Action``s say. No IO, no timers, and the random source is passed in, so every
/// rule is unit-tested.
public struct GatewayClientSession: Sendable {
    /// Who the device is.
    public struct Identity: Sendable, Equatable {
        public var clientKey: String
        /// The device token in lower-case hexadecimal.
        public var deviceToken: String
        /// `production` or `sandbox`, as registered.
        public var environment: String
        /// The alias signature, when the device is bound to an alias of an app that verifies identities.
        public var aliasSignature: String?
        /// Names the client in the gateway's logs (`HeraldKit/1 (iOS 17.1)`).
        public var agent: String

        public init(
            clientKey: String, deviceToken: String, environment: String, aliasSignature: String? = nil,
            agent: String = "HeraldKit/1"
        ) {
            self.clientKey = clientKey
            self.deviceToken = deviceToken.lowercased()
            self.environment = environment
            self.aliasSignature = aliasSignature
            self.agent = agent
        }
    }

    /// What the shell does next.
    public enum Action: Sendable, Equatable {
        /// Open a connection now.
        case connect
        /// Write this frame.
        case send(GatewayFrame)
        /// A push arrived (acknowledged already by the `send` before it): hand it to the app.
        case received(GatewayPush)
        /// A revoke arrived: remove what it names.
        case revoke(Revocation)
        /// Close the connection (the shell then reports ``closed(now:random:)``).
        case close
        /// Connect again after this many milliseconds.
        case reconnect(afterMilliseconds: UInt64)
        /// Nothing to do.
        case nothing
        /// Stay disconnected until the app changes something (docs/gateway.md: the request itself
        /// was wrong, or another connection of this device took over); `code` says why.
        case stop(code: String, message: String)
    }

    private enum State: Sendable, Equatable {
        /// Not connected, nothing planned (before ``start(now:)``, or after a stop).
        case idle
        /// Waiting to connect again at `until`.
        case waiting(until: UInt64)
        /// A socket is opening, or open and the hello sent, the welcome not yet come.
        case greeting(since: UInt64)
        case live(Welcome)
        /// Closing after an error or a goaway; the wait to apply once closed.
        case closing(retryAtLeast: ClosedRange<UInt64>?, stop: StopReason?)
        case stopped(StopReason)
    }

    struct Welcome: Sendable, Equatable {
        var heartbeatMilliseconds: UInt64
        var idleMilliseconds: UInt64
        var connectionID: String
    }

    struct StopReason: Sendable, Equatable {
        var code: String
        var message: String
    }

    /// The stop reason of the app's own ``stop(now:)``: not reported, and a start undoes it.
    static let stoppedByApp = "stopped"

    /// The longest wait for the welcome after connecting (docs/gateway.md: 30 s).
    public static let welcomeTimeoutMilliseconds: UInt64 = 30_000

    public let identity: Identity
    public private(set) var backoff: ReconnectBackoff
    /// Whether pushes are acknowledged (always, in an app); false simulates a phone that stalls.
    public var acknowledgesPushes = true
    private var state: State = .idle
    private var lastSent: UInt64 = 0
    private var lastHeard: UInt64 = 0
    private var nextNonce: UInt64 = 1

    public init(identity: Identity, backoff: ReconnectBackoff = ReconnectBackoff()) {
        self.identity = identity
        self.backoff = backoff
    }

    /// Whether the connection is welcomed.
    public var isLive: Bool {
        if case .live = state { true } else { false }
    }

    /// The connection id the welcome named, while live.
    public var connectionID: String? {
        if case .live(let welcome) = state { welcome.connectionID } else { nil }
    }

    /// Why the session stopped for good, if it did.
    public var stopCode: String? {
        if case .stopped(let reason) = state { reason.code } else { nil }
    }

    /// The app came to the foreground (or a stop's cause was fixed): connect.
    public mutating func start(now: UInt64) -> Action {
        switch state {
        case .idle, .stopped, .waiting:
            state = .greeting(since: now)
            return .connect
        case .closing(_, let stop?) where stop.code == Self.stoppedByApp:
            // Started again before the socket closed: connect again once it has.
            state = .closing(retryAtLeast: nil, stop: nil)
            return .nothing
        case .greeting, .live, .closing:
            return .nothing
        }
    }

    /// The socket is open (TLS done): the hello to send.
    public mutating func opened(now: UInt64) -> Action {
        guard case .greeting = state else { return .close }
        lastSent = now
        lastHeard = now
        var frame = GatewayFrame()
        frame.hello = GatewayHello.with {
            $0.versions = [1]
            $0.clientKey = identity.clientKey
            $0.deviceToken = identity.deviceToken
            $0.environment = identity.environment
            $0.aliasSignature = identity.aliasSignature ?? ""
            $0.agent = identity.agent
        }
        state = .greeting(since: now)
        return .send(frame)
    }

    /// A frame arrived at `now`.
    public mutating func received(_ frame: GatewayFrame, now: UInt64) -> [Action] {
        lastHeard = now
        switch (state, frame.kind) {
        case (.greeting, .welcome(let welcome)?):
            backoff.reset()
            state = .live(
                Welcome(
                    heartbeatMilliseconds: UInt64(max(welcome.heartbeatSeconds, 1)) * 1000,
                    idleMilliseconds: UInt64(max(welcome.idleTimeoutSeconds, 1)) * 1000,
                    connectionID: welcome.connectionID))
            return []
        case (.live, .push(let push)?):
            guard acknowledgesPushes else { return [.received(push)] }
            var ack = GatewayFrame()
            ack.ack = GatewayAck.with { $0.delivery = push.delivery }
            lastSent = now
            return [.send(ack), .received(push)]
        case (.live, .revoke(let revoke)?):
            return [
                .revoke(
                    Revocation(
                        pushID: UUID(gatewayBytes: revoke.pushID),
                        collapseID: revoke.collapseID))
            ]
        case (.live, .ping(let ping)?):
            var pong = GatewayFrame()
            pong.pong = GatewayPong.with { $0.nonce = ping.nonce }
            lastSent = now
            return [.send(pong)]
        case (.closing, _), (.idle, _), (.stopped, _), (.waiting, _):
            // Closing already (the close waits for the peer's TLS close): what still arrives
            // changes nothing, not even an error frame.
            return []
        case (.live, .goaway(let goaway)?), (.greeting, .goaway(let goaway)?):
            let low = UInt64(goaway.reconnectAfterMinMilliseconds)
            let high = max(low, UInt64(goaway.reconnectAfterMaxMilliseconds))
            state = .closing(retryAtLeast: low...high, stop: nil)
            return [.close]
        case (_, .error(let error)?):
            guard error.fatal else { return [] }
            if Self.stopsReconnecting(error.code) {
                state = .closing(retryAtLeast: nil, stop: StopReason(code: error.code, message: error.message))
            } else {
                let retry = UInt64(error.retryAfterMilliseconds)
                state = .closing(retryAtLeast: retry...retry, stop: nil)
            }
            return [.close]
        case (.live, .pong?):
            return []
        default:
            // A frame the server does not send in this state: the connection cannot be trusted.
            state = .closing(retryAtLeast: nil, stop: nil)
            return [.close]
        }
    }

    /// The coarse clock ticked: a ping when nothing was sent for a heartbeat, a close when nothing
    /// was heard for the idle timeout or the welcome is late, a connect when a wait is over.
    public mutating func tick(now: UInt64) -> Action {
        switch state {
        case .waiting(let until):
            guard now >= until else { return .nothing }
            state = .greeting(since: now)
            return .connect
        case .greeting(let since):
            guard now >= since + Self.welcomeTimeoutMilliseconds else { return .nothing }
            state = .closing(retryAtLeast: nil, stop: nil)
            return .close
        case .live(let welcome):
            if now >= lastHeard + welcome.idleMilliseconds {
                state = .closing(retryAtLeast: nil, stop: nil)
                return .close
            }
            guard now >= lastSent + welcome.heartbeatMilliseconds else { return .nothing }
            lastSent = now
            var ping = GatewayFrame()
            ping.ping = GatewayPing.with { $0.nonce = nextNonce }
            nextNonce += 1
            return .send(ping)
        case .idle, .closing, .stopped:
            return .nothing
        }
    }

    /// The app went to the background (or signs out): close, and do not reconnect.
    public mutating func stop(now: UInt64) -> Action {
        switch state {
        case .idle, .stopped:
            return .nothing
        case .waiting:
            state = .idle
            return .nothing
        case .greeting, .live, .closing:
            state = .closing(retryAtLeast: nil, stop: StopReason(code: Self.stoppedByApp, message: "the app closed it"))
            return .close
        }
    }

    /// The socket closed (after a ``Action/close`` or by the network): the wait before the next
    /// connection, or a stop.
    public mutating func closed(now: UInt64, random: inout some RandomNumberGenerator) -> Action {
        switch state {
        case .closing(_, let stop?):
            state = stop.code == Self.stoppedByApp ? .idle : .stopped(stop)
            return stop.code == Self.stoppedByApp ? .nothing : .stop(code: stop.code, message: stop.message)
        case .closing(let asked, nil):
            let atLeast = asked.map { UInt64.random(in: $0, using: &random) } ?? 0
            return wait(atLeast: atLeast, now: now, random: &random)
        case .greeting, .live:
            return wait(atLeast: 0, now: now, random: &random)
        case .idle, .stopped, .waiting:
            return .nothing
        }
    }

    private mutating func wait(atLeast: UInt64, now: UInt64, random: inout some RandomNumberGenerator) -> Action {
        let wait = backoff.nextWait(atLeastMilliseconds: atLeast, using: &random)
        state = .waiting(until: now + wait)
        return .reconnect(afterMilliseconds: wait)
    }

    /// The codes after which a client does not reconnect on its own (docs/gateway.md,
    /// "Reconnecting"): the request itself was wrong, or another connection took over.
    public static func stopsReconnecting(_ code: String) -> Bool {
        switch GatewayErrorCode(rawValue: code) {
        case .unknownKey, .unknownDevice, .aliasSignatureRequired, .aliasSignatureInvalid, .aliasSignatureExpired,
            .unsupportedVersion, .replaced:
            true
        default:
            false
        }
    }
}
