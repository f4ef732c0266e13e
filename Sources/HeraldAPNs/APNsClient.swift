import HeraldAPNsVocabulary
import HeraldHTTP2
import HeraldTiming
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import ServiceLifecycle
import Synchronization

/// Sends notifications to one APNs endpoint with one credential over a pool of HTTP/2
/// connections.
///
/// Each connection carries at most the server's live SETTINGS_MAX_CONCURRENT_STREAMS (1 until
/// a request on it has authenticated); at most `maxInFlight` notifications are in flight in all,
/// and ``send(_:)`` waits for room — nothing is queued without bound. Requests APNs did not
/// process (above a GOAWAY's last-stream-id, REFUSED_STREAM) are sent again on a live
/// connection; every request has a deadline. Each connection has its own provider token,
/// renewed after 50 minutes and never sooner than 20 minutes after the last.
///
/// - Important: call ``run()`` (directly or in a `ServiceGroup`): it opens the connections,
///   reopens them with back-off, PINGs idle ones and closes them at graceful shutdown.
public final class APNsClient: Service, Sendable {
    public let endpoint: APNsEndpoint
    public let configuration: APNsClientConfiguration
    /// ``APNsClientConfiguration/requestTimeout`` in the HTTP/2 engine's unit, worked out once.
    let requestTimeout: TimeAmount
    private let credential: APNsCredential
    private let tls: NIOSSLContext
    private let group: any EventLoopGroup
    private let clock: APNsClock
    private let logger: Logger
    private let state: Mutex<APNsPoolState>
    /// `:authority`, made once.
    let authority: String
    /// When the last unanswered-requests warning was logged.
    private let lastUnansweredWarning = Mutex<ContinuousClock.Instant?>(nil)
    private let lastProtocolErrorWarning = Mutex<ContinuousClock.Instant?>(nil)
    /// Finished by `stop()`; `run()` waits on it.
    private let stopped: AsyncStream<Void>
    private let stoppedContinuation: AsyncStream<Void>.Continuation

    /// - Throws: ``APNsCredentialError`` when the TLS context cannot be made from the credential.
    public init(
        endpoint: APNsEndpoint, credential: APNsCredential, configuration: APNsClientConfiguration = .init(),
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton, clock: APNsClock = .system,
        logger: Logger = Logger(label: "herald.apns")
    ) throws(APNsCredentialError) {
        var clientCertificate: (chain: [NIOSSLCertificate], key: NIOSSLPrivateKey)?
        if case .certificate(let chain, let key) = credential { clientCertificate = (chain, key) }
        do {
            tls = try NIOSSLContext(
                configuration: HTTP2TLS.clientConfiguration(
                    trustedCertificates: endpoint.trustedCertificates, clientCertificate: clientCertificate))
        } catch {
            throw APNsCredentialError("cannot set up TLS with this credential: \(error)")
        }
        self.endpoint = endpoint
        self.authority = endpoint.port == 443 ? endpoint.host : "\(endpoint.host):\(endpoint.port)"
        (stopped, stoppedContinuation) = AsyncStream.makeStream()
        self.credential = credential
        self.configuration = configuration
        self.requestTimeout = TimeAmount(configuration.requestTimeout)
        self.group = group
        self.clock = clock
        self.logger = logger
        self.state = Mutex(
            APNsPoolState(
                connections: max(1, configuration.connections), maxInFlight: max(1, configuration.maxInFlight)))
    }

    // MARK: Sending

    /// Sends one notification and returns what became of it; never throws.
    public func send(_ notification: APNsNotification) async -> APNsOutcome {
        if notification.problem != nil { return .failed(.invalid) }
        var resend = APNsResendRule()
        while true {
            guard let lease = await lease() else {
                return .failed(isStopped ? .clientStopped : .noConnection)
            }
            let authorization = providerToken(for: lease)
            let result: Result<HTTP2Response, any Error>
            do {
                result = .success(
                    try await lease.connection.send(timeout: requestTimeout) { [authority] block in
                        notification.writeRequest(authority: authority, authorization: authorization, into: &block)
                    })
            } catch {
                result = .failure(error)
            }
            let answer = answer(result, on: lease)
            if !resend.sendsAgain(for: answer.sendAgain, limit: configuration.unprocessedResends) {
                return answer.outcome
            }
        }
    }

    /// What an answer from APNs (or its absence) means for a notification: its outcome, and
    /// whether sending it again may change that.
    struct Answer {
        enum SendAgain { case renewedToken, unprocessed }
        var outcome: APNsOutcome
        var sendAgain: SendAgain?
    }

    /// Reads the answer to a request sent on `lease`, gives the stream back (marking the
    /// connection authenticated when the credential was accepted, and its token expired when
    /// APNs said so) and says what became of the notification.
    func answer(_ result: Result<HTTP2Response, any Error>, on lease: APNsLease) -> Answer {
        switch result {
        case .success(let response) where response.status == 200:
            release(lease, authenticated: true)
            return Answer(outcome: .accepted)
        case .success(let response):
            let (reason, timestamp) = Self.parseError(response.body, status: response.status)
            var sendAgain: Answer.SendAgain?
            if reason == .expiredProviderToken, case .token = credential {
                state.withLock { state in
                    if state.slots[lease.slot].connection === lease.connection {
                        state.slots[lease.slot].tokenExpired = true
                    }
                }
                sendAgain = .renewedToken
            }
            release(lease, authenticated: reason.disposition != .credential)
            return Answer(
                outcome: .rejected(reason, status: response.status, unregisteredAt: timestamp), sendAgain: sendAgain)
        case .failure(let error):
            release(lease, authenticated: false)
            let failure = error as? HTTP2Error
            let unprocessed = failure?.requestWasNotProcessed == true
            let outcome: APNsOutcome
            switch failure?.kind {
            case .deadlineExceeded?:
                outcome = .failed(.timeout)
                warnUnanswered()
            case .streamReset(let code)?: outcome = .failed(code == .refusedStream ? .notProcessed : .streamReset(code))
            case .goAway?: outcome = .failed(.notProcessed)
            case .cancelled?: outcome = .failed(.clientStopped)
            case .protocolError(let reason)?:
                outcome = .failed(unprocessed ? .notProcessed : .connectionLost)
                warnProtocolError(reason)
            default: outcome = .failed(unprocessed ? .notProcessed : .connectionLost)
            }
            return Answer(outcome: outcome, sendAgain: unprocessed ? .unprocessed : nil)
        }
    }

    /// Says, at most every ten seconds, that APNs leaves requests unanswered (a server that stalls
    /// its streams or never ends a header block): each such notification ends `timeout`.
    private func warnUnanswered() {
        guard Self.isDue(lastUnansweredWarning) else { return }
        logger.warning(
            "APNs did not answer requests within the request timeout",
            metadata: [
                "endpoint": "\(endpoint.host):\(endpoint.port)", "timeout": "\(configuration.requestTimeout)",
            ])
    }

    /// Says, at most every ten seconds, that APNs broke the HTTP/2 protocol (the connection
    /// closes, its notifications end `connectionLost` or are sent again when never processed).
    private func warnProtocolError(_ reason: String) {
        guard Self.isDue(lastProtocolErrorWarning) else { return }
        logger.warning(
            "APNs broke the HTTP/2 protocol; the connection is closed",
            metadata: ["endpoint": "\(endpoint.host):\(endpoint.port)", "reason": "\(reason)"])
    }

    /// Whether a warning last given at `last` may be given again (ten seconds on), and if so
    /// notes that it is given now.
    private static func isDue(_ last: borrowing Mutex<ContinuousClock.Instant?>) -> Bool {
        let now = ContinuousClock.now
        return last.withLock { last in
            if let last, now - last < .seconds(10) { return false }
            last = now
            return true
        }
    }

    /// Sends many notifications at once and returns what became of each, in order; never
    /// throws.
    ///
    /// The same rules as ``send(_:)`` (stream limits, the in-flight bound, deadlines, a renewed
    /// token, resending what APNs did not process), on a faster path: the notifications are
    /// handed to the connections in groups and each answer, read on the connection's event
    /// loop, sends the next notification from there — no task, continuation or thread hop per
    /// notification. When the calling task is cancelled, notifications not yet sent end
    /// `clientStopped`; those in flight finish.
    /// - Parameter urgent: a transactional push's notifications: while they wait for a stream,
    ///   no other send takes one, and the next free streams are theirs.
    public func send(_ notifications: some APNsNotificationBatch, urgent: Bool = false) async -> APNsBatchResult {
        let run = APNsBatchRun(client: self, notifications: notifications, urgent: urgent)
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in run.start(continuation) }
        } onCancel: {
            run.stopSending()
        }
        return run.result
    }

    /// Returns once `count` sends (or more) wait in line for a stream; for tests of the line.
    public func waitUntilWaiting(_ count: Int) async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state in
                if state.inLine >= count { return true }
                state.lineWatchers.append((count, continuation))
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Connections now: the server's stream limit on each (0 while not connected), and what is in flight.
    public var status: (streamLimits: [Int], inFlight: Int) {
        state.withLock { state in
            (state.slots.map { $0.connection.map { $0.maxConcurrentStreams } ?? 0 }, state.inFlight)
        }
    }

    /// One stream for ``send(_:)``: a free one even while batches wait for their refill group
    /// (a single notification does not wait behind them), else in line.
    private func lease() async -> APNsLease? {
        if let lease = state.withLock({ $0.tryLease() }) { return lease }
        return await withCheckedContinuation { continuation in
            let (immediate, watchers) = state.withLock {
                state -> (APNsLease??, [CheckedContinuation<Void, Never>]) in
                if state.stopped { return (.some(nil), []) }
                if let lease = state.tryLease() { return (.some(lease), []) }
                state.wait({ continuation.resume(returning: $0?.lease) }, urgent: false)
                return (nil, state.satisfiedLineWatchers())
            }
            for watcher in watchers { watcher.resume() }
            if let immediate { continuation.resume(returning: immediate) }
        }
    }

    func release(_ lease: APNsLease, authenticated: Bool) {
        let woken = state.withLock { $0.release(lease, authenticated: authenticated) }
        for (waiter, grant) in woken { waiter(grant) }
    }

    /// What ``lease(upTo:urgent:orWait:)`` came to.
    enum LeaseAnswer {
        case leased(APNsLease, streams: Int)
        case noConnection
        /// `waiter` is registered under this id (``cancelWait(_:)``).
        case waiting(UInt64)
    }

    /// Up to `count` streams, or the id of `waiter`, registered to be called with up to `count`
    /// streams (or nil: no connection) when there is room (``APNsPoolState/wakeWaiters()``).
    func lease(upTo count: Int, urgent: Bool, orWait waiter: @escaping APNsPoolState.Waiter) -> LeaseAnswer {
        let (answer, watchers) = state.withLock { state -> (LeaseAnswer, [CheckedContinuation<Void, Never>]) in
            if state.stopped { return (.noConnection, []) }
            if let leased = state.leaseJoiningLine(upTo: count, urgent: urgent) {
                return (.leased(leased.lease, streams: leased.streams), [])
            }
            let id = state.wait(waiter, wanted: count, urgent: urgent)
            return (.waiting(id), state.satisfiedLineWatchers())
        }
        for watcher in watchers { watcher.resume() }
        return answer
    }

    /// Withdraws the waiter `id` (a send that stopped); false when it was already called.
    @discardableResult
    func cancelWait(_ id: UInt64) -> Bool {
        let (withdrawn, woken) = state.withLock { $0.cancelWait(id) }
        for (waiter, grant) in woken { waiter(grant) }
        return withdrawn
    }

    /// Whether the client was stopped.
    var isStopped: Bool { state.withLock { $0.stopped } }

    /// The connection's provider token, signed afresh when the policy says so. Signing happens
    /// under the pool's lock (rarely: once per connection per 50 minutes) so that concurrent
    /// sends can never put two different new tokens on one connection.
    func providerToken(for lease: APNsLease) -> String? {
        guard case .token(let key) = credential else { return nil }
        let now = clock.secondsSince1970()
        let policy = configuration.tokenPolicy
        return state.withLock { state in
            var slot = state.slots[lease.slot]
            if slot.connection === lease.connection,
                policy.needsNewToken(issuedAt: slot.token?.issuedAt, now: now, expired: slot.tokenExpired)
            {
                slot.token = ("bearer " + key.providerToken(issuedAt: now), now)
                slot.tokenExpired = false
                state.slots[lease.slot] = slot
            }
            return slot.token?.value ?? "bearer " + key.providerToken(issuedAt: now)
        }
    }

    /// Reads `{"reason":"…","timestamp":…}` without Foundation.
    static func parseError(_ body: ByteBuffer, status: Int) -> (APNsReason, Int64?) {
        let bytes = Array(body.readableBytesView)
        func value(after key: String) -> ArraySlice<UInt8>? {
            let needle = Array(key.utf8)
            guard bytes.count >= needle.count else { return nil }
            for start in 0...(bytes.count - needle.count)
            where bytes[start..<start + needle.count].elementsEqual(needle) {
                var index = start + needle.count
                while index < bytes.count, bytes[index] == UInt8(ascii: " ") || bytes[index] == UInt8(ascii: ":") {
                    index += 1
                }
                return bytes[index...]
            }
            return nil
        }
        var reason = APNsReason.unknown("HTTP \(status)")
        if let rest = value(after: "\"reason\""), rest.first == UInt8(ascii: "\"") {
            let text = rest.dropFirst().prefix { $0 != UInt8(ascii: "\"") }
            reason = APNsReason(String(decoding: text, as: UTF8.self))
        }
        var timestamp: Int64?
        if let rest = value(after: "\"timestamp\"") {
            let digits = rest.prefix { $0 >= 48 && $0 <= 57 }
            timestamp = Int64(String(decoding: digits, as: UTF8.self))
        }
        return (reason, timestamp)
    }

    // MARK: Connections

    /// A connection that closes sooner than this after opening, without a GOAWAY from the server,
    /// is reconnected after the reconnection back-off (which only a connection living this long,
    /// or ended by a GOAWAY, resets).
    static let healthyConnectionLifetime: Duration = .seconds(10)

    /// Opens the connections and keeps them open until graceful shutdown (or cancellation).
    public func run() async throws {
        await withGracefulShutdownHandler {
            await withTaskGroup(of: Void.self) { group in
                for slot in 0..<configuration.connections {
                    group.addTask { await self.maintain(slot: slot) }
                }
                for await _ in stopped {}  // until stop(): at graceful shutdown, or shutdown() first
                group.cancelAll()  // wakes connection loops sleeping in back-off
            }
        } onGracefulShutdown: {
            self.stop()
        }
    }

    /// Stops this client on its own (as a credential store does when an app's credential
    /// changes): waiting sends get `clientStopped`, connections close, ``run()`` returns.
    public func shutdown() {
        stop()
    }

    private func stop() {
        stoppedContinuation.finish()
        let (failed, connections) = state.withLock { state in
            state.stopped = true
            return (state.failWaiters(), state.slots.compactMap(\.connection))
        }
        for (waiter, grant) in failed { waiter(grant) }
        for connection in connections {
            Task { await connection.close() }
        }
    }

    private func maintain(slot: Int) async {
        try? await Task.sleep(for: configuration.connectionSpacing * slot)
        var reconnects = configuration.reconnectBackoff.delays()
        while !isStopped, !Task.isCancelled {
            do {
                let connection = try await HTTP2ClientConnection.connect(
                    host: endpoint.host, port: endpoint.port, tls: tls, group: group,
                    timeout: TimeAmount(configuration.connectTimeout))
                let woken = state.withLock { state -> [(APNsPoolState.Waiter, APNsGrant?)] in
                    state.slots[slot] = APNsPoolState.Slot(connection: connection)
                    return state.wakeWaiters()
                }
                for (waiter, grant) in woken { waiter(grant) }
                if isStopped { await connection.close() }
                let opened = ContinuousClock.now
                logger.debug(
                    "APNs connection open",
                    metadata: ["slot": "\(slot)", "endpoint": "\(endpoint.host):\(endpoint.port)"])
                await watch(connection, slot: slot)
                state.withLock { state in
                    if state.slots[slot].connection === connection { state.slots[slot] = APNsPoolState.Slot() }
                }
                let goAway = connection.goAway.map { "\($0.errorCode)" } ?? "none"
                let lived = ContinuousClock.now - opened
                // A GOAWAY is the server closing in order (APNs does so routinely): reconnect at once.
                if lived >= Self.healthyConnectionLifetime || connection.goAway != nil || isStopped {
                    reconnects.reset()
                    logger.debug("APNs connection closed", metadata: ["slot": "\(slot)", "goaway": "\(goAway)"])
                } else {
                    // A server that ends every connection at once (a broken or hostile one, or a
                    // protocol error) is not reconnected to in a tight loop.
                    let delay = reconnects.next()
                    logger.warning(
                        "APNs connection closed soon after it opened; reconnecting after a back-off",
                        metadata: [
                            "slot": "\(slot)", "endpoint": "\(endpoint.host):\(endpoint.port)", "goaway": "\(goAway)",
                            "lived": "\(lived)", "retry-in": "\(delay)",
                        ])
                    try? await Task.sleep(for: delay)
                }
            } catch {
                let delay = reconnects.next()
                logger.warning(
                    "cannot connect to APNs",
                    metadata: [
                        "endpoint": "\(endpoint.host):\(endpoint.port)", "error": "\(error)", "retry-in": "\(delay)",
                    ])
                let failed = state.withLock { state in state.hasLiveConnection ? [] : state.failWaiters() }
                for (waiter, grant) in failed { waiter(grant) }
                try? await Task.sleep(for: delay)
            }
        }
    }

    /// Returns when `connection` has closed (or is going away and idle); PINGs it when idle.
    private func watch(_ connection: HTTP2ClientConnection, slot: Int) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await connection.waitUntilClosed() }
            group.addTask {
                while !Task.isCancelled {
                    try? await Task.sleep(for: self.configuration.idlePingInterval)
                    if Task.isCancelled { return }
                    let idle = self.state.withLock { $0.slots[slot].inUse == 0 }
                    guard idle else { continue }
                    if (try? await connection.ping()) == nil {
                        await connection.close()
                        return
                    }
                }
            }
            await group.next()
            group.cancelAll()
        }
    }
}
