import HeraldGatewayProtocol

/// One connection's protocol (docs/gateway.md, "The conversation") as a state machine: the
/// handler feeds it what arrived and the coarse clock's ticks, and does what the returned
/// ``Action``s say — send a frame, look a hello up, close, hand pushes to APNs — outside of it.
/// No IO and no timers here, so every rule is unit-tested (GatewaySessionTests).
///
/// `Ticket` is what the shell attaches to each push it sends (which push and device, which
/// record it came from); the session hands it back when the push is acknowledged or must go
/// through APNs instead.
public struct GatewaySession<Ticket: Sendable>: Sendable {
    /// The connection's rules (docs/gateway.md, "Limits").
    public struct Rules: Sendable {
        /// The protocol versions this server speaks.
        public var versions: [UInt32] = [1]
        public var helloTimeoutMilliseconds: UInt64 = 10_000
        public var heartbeatSeconds: UInt32 = 60
        public var idleTimeoutSeconds: UInt32 = 150
        public var ackTimeoutMilliseconds: UInt32 = 2_000
        /// Pushes sent and not yet acknowledged; one more is `slow_reader`.
        public var maximumUnacknowledged = 64
        public var maximumFrameBytes = FrameLength.defaultMaximum

        public init() {}
    }

    /// What the shell does next.
    public enum Action: Sendable {
        /// Nothing.
        case none
        /// Look the hello's key, device and alias signature up; answer with
        /// ``authenticated(connectionID:now:)`` or ``refused(_:message:)``.
        case authenticate(GatewayHello, version: UInt32)
        /// Write this frame.
        case send(GatewayFrame)
        /// The push of `ticket` was acknowledged: count it delivered online.
        case acknowledged(Ticket)
        /// These pushes were not acknowledged in time: send them through APNs.
        case fallBack([Ticket])
        /// Write an error frame (`error`), close, and send `fallBack` through APNs.
        case close(GatewayFrame, fallBack: [Ticket])
    }

    private struct Pending: Sendable {
        var ticket: Ticket
        var deadline: UInt64
    }

    private enum State: Sendable {
        case awaitingHello(deadline: UInt64)
        case authenticating(version: UInt32)
        case live(version: UInt32)
        case closed
    }

    public let rules: Rules
    private var state: State
    private var lastHeard: UInt64
    private var nextDelivery: UInt64 = 1
    private var pending: [UInt64: Pending] = [:]

    /// A connection accepted at `now` (milliseconds of a monotonic clock).
    public init(rules: Rules, now: UInt64) {
        self.rules = rules
        state = .awaitingHello(deadline: now + rules.helloTimeoutMilliseconds)
        lastHeard = now
    }

    /// Whether the connection was welcomed and not closed: pushes may be sent.
    public var isLive: Bool {
        if case .live = state { true } else { false }
    }

    /// Whether a hello is being looked up (``Action/authenticate(_:version:)`` was returned and
    /// neither ``authenticated(connectionID:now:)`` nor a close came since).
    public var isAuthenticating: Bool {
        if case .authenticating = state { true } else { false }
    }

    /// The largest frame the reader accepts now.
    public var maximumFrameBytes: Int { rules.maximumFrameBytes }

    /// Pushes sent and not yet acknowledged.
    public var unacknowledged: Int { pending.count }

    /// A frame arrived at `now`.
    public mutating func received(_ frame: GatewayFrame, now: UInt64) -> Action {
        lastHeard = now
        switch state {
        case .closed:
            return .none
        case .awaitingHello:
            guard case .hello(let hello)? = frame.kind else {
                return close(.helloRequired, "Send a hello first: a connection begins with Frame.hello.")
            }
            guard let version = hello.versions.filter(rules.versions.contains).max() else {
                var error = Self.error(
                    .unsupportedVersion,
                    "This server speaks protocol versions \(rules.versions.map(String.init).joined(separator: ", ")); the hello named none of them."
                )
                error.error.supportedVersions = rules.versions
                return closing(with: error)
            }
            state = .authenticating(version: version)
            return .authenticate(hello, version: version)
        case .authenticating:
            // The client must wait for the welcome.
            return close(.malformedFrame, "Wait for the welcome before sending anything after the hello.")
        case .live:
            switch frame.kind {
            case .ping(let ping)?:
                var pong = GatewayFrame()
                pong.pong = GatewayPong.with { $0.nonce = ping.nonce }
                return .send(pong)
            case .pong?:
                return .none
            case .ack(let ack)?:
                guard let acknowledged = pending.removeValue(forKey: ack.delivery) else {
                    return .send(
                        Self.error(
                            .unknownDelivery,
                            "No push with delivery \(ack.delivery) awaits an ack on this connection (acknowledged already, or never sent)."
                        ))
                }
                return .acknowledged(acknowledged.ticket)
            case .hello?:
                return close(.malformedFrame, "This connection is authenticated already; a hello comes only first.")
            case nil:
                // A kind of a newer version arrives as an unknown field: ignored (docs/gateway.md).
                guard frame.unknownFields.data.isEmpty else { return .none }
                return close(.malformedFrame, "A frame has exactly one kind set; this one had none.")
            case .welcome?, .push?, .revoke?, .goaway?, .error?:
                return close(.malformedFrame, "A client does not send welcome, push, revoke, goaway or error frames.")
            }
        }
    }

    /// A frame that did not decode (or whose length was refused) arrived.
    public mutating func unreadable(_ code: GatewayErrorCode) -> Action {
        close(
            code,
            code == .frameTooLarge
                ? "A frame is at most \(rules.maximumFrameBytes) bytes."
                : "The bytes after a frame's length are not a Frame (Schemas/gateway/gateway.proto).")
    }

    /// The hello authenticated: the welcome to send.
    public mutating func authenticated(connectionID: String, now: UInt64) -> Action {
        guard case .authenticating(let version) = state else { return .none }
        state = .live(version: version)
        lastHeard = now
        var welcome = GatewayFrame()
        welcome.welcome = GatewayWelcome.with {
            $0.version = version
            $0.heartbeatSeconds = rules.heartbeatSeconds
            $0.idleTimeoutSeconds = rules.idleTimeoutSeconds
            $0.maxFrameBytes = UInt32(rules.maximumFrameBytes)
            $0.connectionID = connectionID
            $0.ackTimeoutMilliseconds = rules.ackTimeoutMilliseconds
        }
        return .send(welcome)
    }

    /// The hello did not authenticate.
    public mutating func refused(_ code: GatewayErrorCode, message: String, retryAfterMilliseconds: UInt32 = 0)
        -> Action
    {
        var error = Self.error(code, message)
        error.error.retryAfterMilliseconds = retryAfterMilliseconds
        return closing(with: error)
    }

    /// A push for this connection's device: its frame (numbered here), or, when too many wait for
    /// an ack, the close of a slow reader (the push falls back with the rest). Not live: the push
    /// falls back at once.
    public mutating func push(_ push: GatewayPush, ticket: Ticket, now: UInt64) -> Action {
        guard isLive else { return .fallBack([ticket]) }
        guard pending.count < rules.maximumUnacknowledged else {
            let error = Self.error(
                .slowReader,
                "\(rules.maximumUnacknowledged) pushes waited for an ack: read and acknowledge pushes as they come.")
            return .close(error, fallBack: connectionClosed() + [ticket])
        }
        let delivery = nextDelivery
        nextDelivery += 1
        pending[delivery] = Pending(ticket: ticket, deadline: now + UInt64(rules.ackTimeoutMilliseconds))
        var frame = GatewayFrame()
        frame.push = push
        frame.push.delivery = delivery
        return .send(frame)
    }

    /// A revoke for this connection's device (a recall, docs/gateway.md "Revoke"): its frame when
    /// the connection is live, nil otherwise. A revoke is not acknowledged and holds no state.
    public func revoke(_ revoke: GatewayRevoke) -> GatewayFrame? {
        guard isLive else { return nil }
        var frame = GatewayFrame()
        frame.revoke = revoke
        return frame
    }

    /// The earliest time (milliseconds of the monotonic clock) at which ``tick(now:)`` may have
    /// something to do — the hello's deadline, the idle timeout, the first push's ack deadline —
    /// or nil while nothing can fall due (a hello being looked up, the connection closed). Ticks
    /// before it change nothing; the shell need not tick the session earlier.
    public var nextDeadline: UInt64? {
        switch state {
        case .awaitingHello(let deadline):
            return deadline
        case .authenticating, .closed:
            return nil
        case .live:
            var due = lastHeard + UInt64(rules.idleTimeoutSeconds) * 1000
            for entry in pending.values where entry.deadline < due { due = entry.deadline }
            return due
        }
    }

    /// The coarse clock ticked: the hello and idle timeouts, and the pushes whose ack is late.
    public mutating func tick(now: UInt64) -> Action {
        switch state {
        case .closed:
            return .none
        case .awaitingHello(let deadline):
            guard now >= deadline else { return .none }
            return close(
                .helloTimeout, "No hello came within \(rules.helloTimeoutMilliseconds / 1000) s of connecting.")
        case .authenticating:
            return .none
        case .live:
            if now >= lastHeard + UInt64(rules.idleTimeoutSeconds) * 1000 {
                return close(
                    .idleTimeout,
                    "Nothing was heard for \(rules.idleTimeoutSeconds) s: send a ping every \(rules.heartbeatSeconds) s."
                )
            }
            let late = pending.filter { $0.value.deadline <= now }.sorted { $0.key < $1.key }
            guard !late.isEmpty else { return .none }
            for (delivery, _) in late { pending[delivery] = nil }
            return .fallBack(late.map(\.value.ticket))
        }
    }

    /// The server closes the connection (`replaced`, a drain's goaway already sent, …): every push
    /// not acknowledged goes through APNs.
    public mutating func close(_ code: GatewayErrorCode, _ message: String) -> Action {
        closing(with: Self.error(code, message))
    }

    /// The connection is gone (the peer closed it, the network failed): the pushes not
    /// acknowledged, to send through APNs.
    public mutating func connectionClosed() -> [Ticket] {
        state = .closed
        defer { pending = [:] }
        return pending.sorted { $0.key < $1.key }.map(\.value.ticket)
    }

    private mutating func closing(with error: GatewayFrame) -> Action {
        .close(error, fallBack: connectionClosed())
    }

    /// An error frame.
    public static func error(_ code: GatewayErrorCode, _ message: String) -> GatewayFrame {
        var frame = GatewayFrame()
        frame.error = GatewayError.with {
            $0.code = code.rawValue
            $0.message = message
            $0.fatal = code.isFatal
        }
        return frame
    }
}
