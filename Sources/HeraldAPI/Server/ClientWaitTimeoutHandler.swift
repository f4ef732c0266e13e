import NIOCore
import NIOHTTPTypes

/// Closes a connection that keeps herald-api waiting on its client (`HERALD_API_IDLE_TIMEOUT_MS`),
/// never one on which herald-api itself is working.
///
/// The clock runs only while herald-api waits for the client:
/// - between requests (and before the first), until the next request's head arrives: an idle
///   keep-alive connection, or half a request line, then silence;
/// - while a request's body is read, and only while the server has asked for more of it (an
///   outstanding `read`) and none has come.
///
/// It stops while the server works: after the request is read and before the response ends, and
/// while the server, busy with what it has (an import merging a batch into the devices table),
/// does not ask for more of the body. Hummingbird's own idle timeout counts a body the server has
/// not asked for yet as the client's silence, and closed a 100,000-device import under its
/// client while the last batch merged (issue 41).
///
/// One scheduled task per connection, re-armed only when the wait starts: NIO's own idle handler
/// would reschedule on every read.
final class ClientWaitTimeoutHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let timeout: TimeAmount
    private var state = State()
    private var scheduled: Scheduled<Void>?
    /// Bumped at every arm and disarm, so a task that fires after it was superseded does nothing.
    private var generation = 0

    init(timeout: TimeAmount) {
        self.timeout = timeout
    }

    func channelActive(context: ChannelHandlerContext) {
        apply(state.connectionStarted(), context: context)
        context.fireChannelActive()
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { apply(state.connectionStarted(), context: context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        disarm()
    }

    func channelInactive(context: ChannelHandlerContext) {
        disarm()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        apply(state.received(unwrapInboundIn(data)), context: context)
        context.fireChannelRead(data)
    }

    func read(context: ChannelHandlerContext) {
        apply(state.serverAskedForMore(), context: context)
        context.read()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { apply(state.responseEnded(), context: context) }
        context.write(data, promise: promise)
    }

    private func apply(_ action: State.Action, context: ChannelHandlerContext) {
        switch action {
        case .none:
            return
        case .stopClock:
            disarm()
        case .startClock:
            disarm()
            let generation = generation
            let loop = context.eventLoop.assumeIsolated()
            scheduled = loop.scheduleTask(in: timeout) { [self] in
                guard self.generation == generation else { return }
                scheduled = nil
                context.close(promise: nil)
            }
        }
    }

    private func disarm() {
        generation &+= 1
        scheduled?.cancel()
        scheduled = nil
    }

    /// Whether herald-api is waiting on the client now, as parts come and go.
    struct State {
        enum Action: Equatable {
            case startClock, stopClock, none
        }

        /// Requests whose head has come and whose response has not ended (more than one only
        /// for a client that pipelines).
        private(set) var requestsInProgress = 0
        /// A request's head has come, its end not yet.
        private(set) var readingBody = false
        /// While reading a body: the server asked for more and none has come since.
        private(set) var serverWaiting = false
        private var clockRunning = false

        /// A body is timed only when it belongs to the one request in progress: a client that
        /// pipelines a request while an earlier response (a live stream) is still written is
        /// waited on only once that response ends.
        var isWaitingOnClient: Bool { readingBody ? serverWaiting && requestsInProgress <= 1 : requestsInProgress == 0 }

        mutating func connectionStarted() -> Action { settle(newWait: false) }

        mutating func received(_ part: HTTPRequestPart) -> Action {
            switch part {
            case .head:
                requestsInProgress += 1
                readingBody = true
            case .body:
                break
            case .end:
                readingBody = false
            }
            serverWaiting = false
            return settle(newWait: false)
        }

        mutating func serverAskedForMore() -> Action {
            guard readingBody, !serverWaiting else { return .none }
            serverWaiting = true
            return settle(newWait: true)
        }

        mutating func responseEnded() -> Action {
            requestsInProgress = max(0, requestsInProgress - 1)
            return settle(newWait: true)
        }

        /// - Parameter newWait: a wait that starts now, so a running clock starts again.
        private mutating func settle(newWait: Bool) -> Action {
            let waiting = isWaitingOnClient
            defer { clockRunning = waiting }
            switch (clockRunning, waiting) {
            case (false, true): return .startClock
            case (true, false): return .stopClock
            case (true, true): return newWait ? .startClock : .none
            case (false, false): return .none
            }
        }
    }
}
