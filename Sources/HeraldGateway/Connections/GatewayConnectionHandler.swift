import HeraldGatewayProtocol
import NIOCore

/// One connection, from the moment its transport is set up: feeds what arrives and the sweep's
/// ticks to its ``GatewaySession`` and does what the session says — write a frame, look a hello
/// up, close, count a push acknowledged or handed back — all on the connection's event loop.
///
/// The transport below it (``GatewayFrameDecoder`` and ``GatewayFrameEncoder``, or the
/// ``WebSocketFrameAdapter``) turns bytes into ``GatewayInbound`` and frames into bytes.
///
/// While the socket takes nothing more (the client does not read what it is sent), the handler
/// reads nothing either: a client that sends pings and reads no pongs fills its own buffers, not
/// the gateway's memory.
final class GatewayConnectionHandler: ChannelDuplexHandler, SweptConnection {
    typealias InboundIn = GatewayInbound
    typealias OutboundIn = GatewayFrame
    typealias OutboundOut = GatewayFrame

    private let environment: ConnectionEnvironment
    private let arrival: Arrival
    private let number: UInt64
    private var session: GatewaySession<DeliveryTicket>
    private var context: ChannelHandlerContext?
    /// The sweep of this connection's event loop.
    private var loop: EventLoopConnections?
    /// The device, once welcomed.
    private var deviceID: Int64?
    /// A goaway was sent: no more pushes; the connection closes once the goaway is written and
    /// nothing awaits an ack.
    private var draining: Draining?
    /// Since when the connection takes nothing more (the client does not read what is written):
    /// no push is written meanwhile, and past the ack timeout it is closed `slow_reader`.
    private var unwritableSince: UInt64?
    /// A delivery batch is writing: a push's frame waits for the batch's one flush.
    private var deferFlush = false
    /// Authenticated, and waiting since then for its presence to be written before the welcome.
    private var welcomeWaitingSince: UInt64?
    /// The session closed the connection: its last (error) frame is written, then the socket
    /// closes (TLS waits at most ``GatewayTLS/shutdownTimeout`` for the client's close_notify).
    private var closing: Closing?
    /// A read was asked for while the socket was unwritable: it is passed on once it is writable.
    private var readWaiting = false

    private enum Draining {
        /// The goaway is being written since then (a client far behind reads it after all it
        /// had not read); past the ack timeout the connection is closed without it.
        case writing(since: UInt64)
        /// The goaway was written (or failed).
        case written
        /// The connection's close is under way (the TLS close may take a while).
        case left
    }

    private enum Closing {
        /// The frame is being written since then; past the ack timeout the socket is closed
        /// without it (a peer that reads nothing would otherwise keep it open for ever).
        case writing(since: UInt64)
        /// The frame was written (or failed): the socket's close is under way.
        case written
        /// Closed at the ack timeout without the frame.
        case forced
    }

    /// The ack timeout (milliseconds): also the bound on a socket that takes nothing, and on a
    /// closing connection's last frame.
    private var ackTimeout: UInt64 { UInt64(environment.rules.ackTimeoutMilliseconds) }

    /// How long a welcome waits for the connection's presence to be written (while PostgreSQL
    /// does not answer, the connection is welcomed anyway and its pushes go through APNs).
    static let presenceWaitMilliseconds: UInt64 = 5_000

    init(environment: ConnectionEnvironment, arrival: Arrival, number: UInt64) {
        self.environment = environment
        self.arrival = arrival
        self.number = number
        session = GatewaySession(rules: environment.rules, now: arrival.accepted)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        let loop = environment.loop(of: context.channel)
        self.loop = loop
        loop.track(self, of: context.channel, due: session.nextDeadline)
        // Only the TLS handshake or the upgrade's answer was written before: under the watermark,
        // but checked all the same, so that reads held back always have a deadline.
        if !context.channel.isWritable {
            let now = EventLoopConnections.now()
            unwritableSince = now
            reschedule(now: now)
        }
        if let wait = arrival.refusedForRate {
            perform(
                session.refused(
                    .tooManyConnections,
                    message: "This address opens connections faster than the gateway allows; connect again later.",
                    retryAfterMilliseconds: wait))
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let now = EventLoopConnections.now()
        switch unwrapInboundIn(data) {
        case .frame(let frame):
            environment.metrics.framesReceived.add(1, ordering: .relaxed)
            perform(session.received(frame, now: now))
        case .unreadable(let code):
            perform(session.unreadable(code))
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        let now = EventLoopConnections.now()
        let writable = context.channel.isWritable
        unwritableSince = writable ? nil : now
        reschedule(now: now)
        context.fireChannelWritabilityChanged()
        if writable, readWaiting {
            readWaiting = false
            context.read()
        }
    }

    func read(context: ChannelHandlerContext) {
        guard context.channel.isWritable else {
            readWaiting = true
            return
        }
        context.read()
    }

    func channelInactive(context: ChannelHandlerContext) {
        handBack(session.connectionClosed())
        if let deviceID {
            environment.directory.stopWaiting(number)
            environment.directory.release(deviceID, connectionID: number)
        }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // A TLS or socket failure: nothing can be written any more.
        context.close(promise: nil)
    }

    // MARK: The sweep

    /// Names this connection's earliest deadline to its loop's sweep. Called after whatever may
    /// bring one closer — a push sent (its ack deadline), the welcome awaited, the socket turned
    /// unwritable, a drain, a visit of the sweep; a frame heard only moves deadlines later, and
    /// the visit at the earlier one finds nothing due and names the later one.
    private func reschedule(now: UInt64) {
        guard let context, let loop else { return }
        var due = session.nextDeadline
        func earliest(_ deadline: UInt64) { due = min(due ?? deadline, deadline) }
        if let since = welcomeWaitingSince { earliest(since + Self.presenceWaitMilliseconds) }
        if let since = unwritableSince { earliest(since + ackTimeout) }
        if case .writing(let since) = closing { earliest(since + ackTimeout) }
        // A drain closes the connection at the first visit with its goaway written and nothing
        // left to acknowledge.
        switch draining {
        case .written?: earliest(now + 1)
        case .writing(let since)?: earliest(since + ackTimeout)
        case .left?, nil: break
        }
        loop.schedule(context.channel, due: due)
    }

    func tick(now: UInt64) {
        if let closing {
            // Closing: only the bound on writing the last frame is left.
            guard case .writing(let since) = closing else { return }
            guard now >= since + ackTimeout else {
                reschedule(now: now)
                return
            }
            self.closing = .forced
            guard let context, context.channel.isActive else { return }
            environment.metrics.closedUnwritten.add(1, ordering: .relaxed)
            context.close(promise: nil)
            return
        }
        defer { reschedule(now: now) }
        if let since = welcomeWaitingSince, now >= since + Self.presenceWaitMilliseconds {
            environment.directory.stopWaiting(number)
            welcome(presenceWritten: false)
        }
        if let since = unwritableSince, now >= since + ackTimeout {
            unwritableSince = nil
            perform(
                session.close(
                    .slowReader, "The connection took nothing the server wrote for a while: read frames as they come."))
            return
        }
        perform(session.tick(now: now))
        // A close the session decided in this visit (an idle timeout) goes its own way.
        if let draining, closing == nil, session.unacknowledged == 0 { leave(draining, now: now) }
    }

    /// The end of a drain: the connection closes once its goaway is written, or without it past
    /// the ack timeout (a close before it is written would drop it with the bytes still unsent).
    private func leave(_ draining: Draining, now: UInt64) {
        guard let context, context.channel.isActive else { return }
        switch draining {
        case .written:
            self.draining = .left
            context.close(promise: nil)
        case .writing(let since) where now >= since + ackTimeout:
            self.draining = .left
            environment.metrics.closedUnwritten.add(1, ordering: .relaxed)
            context.close(promise: nil)
        case .writing, .left:
            break
        }
    }

    func goaway(_ frame: GatewayFrame) {
        // A connection closing already is left to its close (and its bound): a close now would
        // drop its last frame unwritten. One goaway a connection.
        guard closing == nil, draining == nil else { return }
        guard session.isLive, let context else {
            context?.close(promise: nil)
            return
        }
        let now = EventLoopConnections.now()
        draining = .writing(since: now)
        environment.metrics.goaways.add(1, ordering: .relaxed)
        environment.metrics.framesSent.add(1, ordering: .relaxed)
        let connection = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(frame)).whenComplete { _ in
            guard case .writing = connection.value.draining else { return }
            connection.value.draining = .written
            connection.value.reschedule(now: EventLoopConnections.now())
        }
        reschedule(now: now)
    }

    /// Writes `push` to this connection; `ticket` is answered whether the device acknowledged it
    /// in time. A connection not live (or draining) answers false at once. Without `flush`, the
    /// frame waits in the channel for ``flush()`` (a delivery batch flushes each connection once).
    /// - Returns: whether a frame was written and waits for a flush.
    @discardableResult
    func deliver(_ push: GatewayPush, ticket: DeliveryTicket, flush: Bool = true) -> Bool {
        // A connection not reading what it is sent, or a push too large for a frame, goes
        // through APNs instead.
        guard draining == nil, let context, context.channel.isWritable, deviceID != nil,
            push.payload.count + Self.pushFrameOverhead <= environment.rules.maximumFrameBytes
        else {
            ticket.answer(false)
            return false
        }
        deferFlush = !flush
        defer { deferFlush = false }
        let now = EventLoopConnections.now()
        let action = session.push(push, ticket: ticket, now: now)
        perform(action)
        guard case .send = action else { return false }
        reschedule(now: now)
        return !flush
    }

    /// Flushes frames written without a flush.
    func flush() {
        context?.flush()
    }

    /// Writes a recall's `revoke` to this connection; `ticket` is answered whether it was written
    /// to the socket (a revoke is not acknowledged). A connection not live, draining or not
    /// reading answers false at once: the recall then goes through APNs.
    func revoke(_ revoke: GatewayRevoke, ticket: DeliveryTicket) {
        guard draining == nil, let context, context.channel.isWritable, let frame = session.revoke(revoke) else {
            ticket.answer(false)
            return
        }
        environment.metrics.revokesSent.add(1, ordering: .relaxed)
        environment.metrics.framesSent.add(1, ordering: .relaxed)
        let done = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(frame), promise: done)
        done.futureResult.whenComplete { ticket.answer((try? $0.get()) != nil) }
    }

    /// What a push frame holds besides its payload, at most (push id, collapse id, push type,
    /// priority, expiry, delivery number and their tags).
    static let pushFrameOverhead = 256

    /// A newer connection of the same device took over.
    func replace() {
        guard closing == nil else { return }
        environment.metrics.replaced.add(1, ordering: .relaxed)
        perform(session.close(.replaced, "A newer connection of this device took over; this one is closed."))
    }

    // MARK: Doing what the session says

    private func perform(_ action: GatewaySession<DeliveryTicket>.Action) {
        // Tickets are answered whatever becomes of the connection: a delivery waits on each.
        switch action {
        case .acknowledged(let ticket):
            environment.metrics.acknowledged.add(1, ordering: .relaxed)
            ticket.answer(true)
            return
        case .fallBack(let tickets):
            handBack(tickets)
            return
        case .close(_, let tickets):
            handBack(tickets)
        default:
            break
        }
        guard let context else { return }
        switch action {
        case .none:
            break
        case .authenticate(let hello, _):
            authenticate(hello, context)
        case .send(let frame):
            switch frame.kind {
            case .error(let error)?:
                if let code = GatewayErrorCode(rawValue: error.code) { environment.metrics.sent(code) }
            case .push?:
                environment.metrics.pushesSent.add(1, ordering: .relaxed)
            case .pong? where !context.channel.isWritable:
                // A ping heard while the client reads nothing is not answered: the pongs would
                // only pile up here (the ping still counts as heard).
                return
            default:
                break
            }
            write(frame, context)
            if !deferFlush { context.flush() }
        case .acknowledged, .fallBack:
            break
        case .close(let frame, _):
            // One last frame: a second close (a replace while closing) writes nothing more.
            guard closing == nil else { return }
            if case .error(let error)? = frame.kind, let code = GatewayErrorCode(rawValue: error.code) {
                environment.metrics.sent(code)
            }
            let now = EventLoopConnections.now()
            closing = .writing(since: now)
            let connection = NIOLoopBound(self, eventLoop: context.eventLoop)
            let channel = context.channel
            environment.metrics.framesSent.add(1, ordering: .relaxed)
            context.writeAndFlush(wrapOutboundOut(frame)).whenComplete { _ in
                if case .writing = connection.value.closing { connection.value.closing = .written }
                channel.close(promise: nil)
            }
            reschedule(now: now)
        }
    }

    private func write(_ frame: GatewayFrame, _ context: ChannelHandlerContext) {
        environment.metrics.framesSent.add(1, ordering: .relaxed)
        context.write(wrapOutboundOut(frame), promise: nil)
    }

    /// Pushes that were not acknowledged on this connection: their senders send them through APNs.
    private func handBack(_ tickets: [DeliveryTicket]) {
        guard !tickets.isEmpty else { return }
        environment.metrics.fallbacks.add(tickets.count, ordering: .relaxed)
        for ticket in tickets { ticket.answer(false) }
    }

    private func authenticate(_ hello: GatewayHello, _ context: ChannelHandlerContext) {
        let connection = NIOLoopBound(self, eventLoop: context.eventLoop)
        let authenticator = environment.authenticator
        let source = arrival.source
        context.eventLoop.makeFutureWithTask {
            await authenticator.authenticate(hello, source: source)
        }.whenSuccess { verdict in
            connection.value.authenticated(verdict)
        }
    }

    private func authenticated(_ verdict: GatewayAuthenticator.Verdict) {
        // The connection may have closed (or been refused) while the hello was looked up: then
        // it claims nothing, and replaces no other connection of the device.
        guard let context, context.channel.isActive, session.isAuthenticating else { return }
        switch verdict {
        case .accepted(let identity):
            deviceID = identity.deviceID
            let entry = DeviceDirectory.Entry(
                connectionID: number, appID: identity.appID,
                connection: NIOLoopBound(self, eventLoop: context.eventLoop))
            let (previous, batch) = environment.directory.claim(identity.deviceID, entry)
            if let previous {
                previous.connection.eventLoop.execute { previous.connection.value.replace() }
            }
            // The welcome waits for the presence write, so that once an app sees itself
            // connected, a push sent to it is routed here (docs/gateway.md, "Presence").
            welcomeWaitingSince = EventLoopConnections.now()
            reschedule(now: welcomeWaitingSince!)
            let connection = entry.connection
            environment.directory.whenWritten(batch, connectionID: number) {
                connection.eventLoop.execute { connection.value.welcome(presenceWritten: true) }
            }
        case .refused(let code, let message, let wait):
            perform(session.refused(code, message: message, retryAfterMilliseconds: wait))
        }
    }

    /// The presence of this connection is written (or was waited for long enough): it is live.
    private func welcome(presenceWritten: Bool) {
        guard welcomeWaitingSince != nil else { return }
        welcomeWaitingSince = nil
        guard let context, context.channel.isActive, session.isAuthenticating else { return }
        environment.metrics.welcomes.add(1, ordering: .relaxed)
        if !presenceWritten { environment.metrics.welcomesBeforePresence.add(1, ordering: .relaxed) }
        let now = EventLoopConnections.now()
        perform(session.authenticated(connectionID: "\(environment.name)-\(number)", now: now))
        reschedule(now: now)
    }
}
