import Foundation
import HeraldGatewayProtocol

/// HeraldKit's one object an app keeps (docs/sdk.md): it registers the device on every launch
/// (handing a changed token over with `previous_token`), binds the user's alias with the
/// signature the app's back-end makes, keeps the long connection while the app is in the
/// foreground, shows each push once whichever road brought it, removes what a recall revokes, and
/// reports what the user did, queued on disk until the server has it.
public actor HeraldClient {
    /// Asks the app's back-end to sign (token, alias): returns the `alias_signature`
    /// (docs/security.md). Only an app with identity verification needs one.
    public typealias AliasSigner = @Sendable (_ token: String, _ alias: String) async throws -> String

    /// What to do with a notification that arrived through APNs while the app runs.
    public enum Presentation: Sendable, Equatable {
        /// Show it: the first copy of its push.
        case show
        /// Do not show it: this push was shown already (it came over the long connection first).
        case duplicate
        /// A recall: nothing to show; the plan's notifications were removed.
        case revoked(RevokePlan)
        /// Not Herald's (no `herald` key): the app decides.
        case notHerald
    }

    public nonisolated let configuration: HeraldConfiguration
    private let api: HeraldAPIClient
    private let center: any HeraldNotificationCenter
    private let storage: any HeraldStorage
    private let aliasSigner: AliasSigner?
    private let now: @Sendable () -> Date
    private var record: RegistrationRecord
    private var shown: ShownPushes
    private var queue: EngagementQueue
    private var retryEventsAt: Date?
    private var connection: GatewayConnection?
    private var connectionEvents: Task<Void, Never>?
    private var inForeground = false
    /// Whether this foreground's connection was signed again after a refused signature (once).
    private var resignedThisForeground = false
    private var aliasSignature: String?
    private var registrationTail: Task<Void, Never>?
    private var flushing = false
    /// Push ids revoked lately: a push being shown while its revoke ran is removed once shown.
    private var revoked = RecentlyRevoked()
    private var pushContinuations: [UUID: AsyncStream<OnlinePush>.Continuation] = [:]

    /// - Parameters:
    ///   - notificationCenter: the system's (HeraldKitNotifications' `SystemNotificationCenter`),
    ///     or a fake in tests.
    ///   - storage: where the registration, the shown push ids and the unsent events live.
    ///   - transport: how to reach herald-api (HeraldKitURLSession's `URLSessionTransport` in an app).
    ///   - aliasSigner: how to get an alias signature from the app's back-end.
    public init(
        configuration: HeraldConfiguration, notificationCenter: any HeraldNotificationCenter,
        storage: any HeraldStorage,
        transport: any HeraldHTTPTransport, aliasSigner: AliasSigner? = nil,
        now: @escaping @Sendable () -> Date = Date.init
    ) {
        self.configuration = configuration
        api = HeraldAPIClient(baseURL: configuration.apiURL, clientKey: configuration.clientKey, transport: transport)
        center = notificationCenter
        self.storage = storage
        self.aliasSigner = aliasSigner
        self.now = now
        record = storage.load(RegistrationRecord.self, named: Names.registration) ?? RegistrationRecord()
        shown =
            storage.load(ShownPushes.self, named: Names.shown)
            ?? ShownPushes(capacity: configuration.shownPushesCapacity)
        queue =
            storage.load(EngagementQueue.self, named: Names.events)
            ?? EngagementQueue(capacity: configuration.engagementCapacity)
    }

    // MARK: Registration

    /// The token the server knows this device by, after a registration succeeded.
    public var deviceToken: String? { record.token }

    /// Registers the device: call on every launch with the token APNs gave
    /// (`didRegisterForRemoteNotificationsWithDeviceToken`). A token that changed is sent with
    /// the old one as `previous_token`, so the server moves the alias and tags over at once.
    /// - Parameter update: the rest of the registration (tags, attributes, locale, …).
    /// - Throws: ``HeraldAPIError`` (a refused alias signature, a tag the app does not allow, …).
    @discardableResult
    public func register(
        deviceToken: some Sequence<UInt8>, update: @escaping @Sendable (inout DeviceRegistration) -> Void = { _ in }
    ) async throws -> RegisteredDevice {
        let token = hexadecimal(deviceToken)
        return try await serialized { try await self.performRegistration(token: token, update: update) }
    }

    /// Binds the user's alias to this device (after sign-in), with the signature from the app's
    /// back-end when the app verifies identities.
    /// - Throws: ``HeraldAPIError`` `alias_signature_required` / `_invalid` / `_expired`, or
    ///   ``NotRegistered`` before the first registration.
    @discardableResult
    public func bind(alias: String) async throws -> RegisteredDevice {
        try await serialized { try await self.performRegistration(token: nil) { $0.alias = alias } }
    }

    /// Adds tags (among the app's `client_tags`).
    @discardableResult
    public func add(tags: [String]) async throws -> RegisteredDevice {
        try await serialized { try await self.performRegistration(token: nil) { $0.tags = tags } }
    }

    /// Reports whether the user lets the app show notifications (`authorized`, `denied`, …).
    @discardableResult
    public func report(authorizationStatus: String) async throws -> RegisteredDevice {
        try await serialized {
            try await self.performRegistration(token: nil) { $0.authorizationStatus = authorizationStatus }
        }
    }

    /// Runs registrations one after another: each is built from the record the previous one left
    /// (a tag added during a token rotation goes to the new token, never the retired one).
    private func serialized<Value: Sendable>(_ work: @escaping @Sendable () async throws -> Value) async throws
        -> Value
    {
        let previous = registrationTail
        let task = Task { () async throws -> Value in
            await previous?.value
            return try await work()
        }
        registrationTail = Task { _ = try? await task.value }
        return try await task.value
    }

    /// One registration: `token` (nil: the one registered already) with what `update` sets.
    private func performRegistration(token: String?, update: @Sendable (inout DeviceRegistration) -> Void)
        async throws -> RegisteredDevice
    {
        guard let token = token ?? record.token else { throw NotRegistered() }
        var registration = record.registration(for: token, environment: configuration.environment)
        update(&registration)
        var carried = false
        if registration.alias == nil, let alias = record.alias, registration.previousToken != nil {
            // A new token needs its own signature: the v2 signature names the token.
            registration.alias = alias
            carried = true
        }
        if let alias = registration.alias, registration.aliasSignature == nil, let aliasSigner {
            do {
                registration.aliasSignature = try await aliasSigner(registration.token, alias)
            } catch  where carried {
                // The back-end cannot sign now: register the new token without the alias (the
                // server releases it from the old one); the app binds it again later.
                registration.alias = nil
            }
        }
        let registered = try await api.register(registration)
        let before = record
        record = record.after(registration, at: now())
        if registration.alias != nil { aliasSignature = registration.aliasSignature }
        if carried, registration.alias == nil { record.alias = nil }
        try storage.save(record, named: Names.registration)
        if before.token != record.token || registration.alias != nil {
            // The connection's hello names the token and the alias signature: say it again.
            await reconnectIfForeground()
        }
        return registered
    }

    /// Thrown by calls that need a registered device before ``register(deviceToken:update:)``.
    public struct NotRegistered: Error, CustomStringConvertible {
        public var description: String { "register the device (HeraldClient.register) before this call" }
    }

    // MARK: The long connection

    /// The pushes that arrive over the long connection (after de-duplication), for the app's own
    /// handling: a background push's data, an in-app message. Alerts are also shown.
    public func onlinePushes() -> AsyncStream<OnlinePush> {
        let (stream, continuation) = AsyncStream<OnlinePush>.makeStream(bufferingPolicy: .bufferingNewest(100))
        let id = UUID()
        pushContinuations[id] = continuation
        continuation.onTermination = { _ in Task { await self.dropContinuation(id) } }
        return stream
    }

    private func dropContinuation(_ id: UUID) {
        pushContinuations[id] = nil
    }

    /// The app came to the foreground: connect to herald-gateway (when configured and the device
    /// is registered), and send the events waiting. Call it again after the first registration
    /// of a launch, or let ``register(deviceToken:update:)`` do it.
    public func enterForeground() async {
        inForeground = true
        resignedThisForeground = false
        if connection == nil { await connect() }
        connection?.start()
        await flushEvents()
    }

    /// The app went to the background: close the connection (APNs reaches the app there).
    public func enterBackground() {
        inForeground = false
        disconnect()
    }

    /// Whether the long connection is welcomed now.
    public private(set) var live = false

    /// What the connection reports, handled one at a time in the order it happened (a replace
    /// after its original, a loss after its welcome).
    private enum ConnectionEvent: Sendable {
        case push(GatewayPush)
        case revoke(Revocation)
        case live(Bool)
        case stopped(code: String)
    }

    private func connect() async {
        guard let endpoint = configuration.gateway, let token = record.token, let environment = record.environment
        else { return }
        // An alias-bound device says hello with a signature for its token (docs/gateway.md),
        // signed afresh on each connection: signatures expire.
        let alias = record.alias
        var signature = aliasSignature
        if let alias, let aliasSigner {
            signature = (try? await aliasSigner(token, alias)) ?? aliasSignature
        }
        // While the signer ran, another call may have connected, the app may have left the
        // foreground, or a registration may have changed the token or the alias (and started a
        // connection of its own for them): one connection at most, none in the background, and
        // none under an identity that is no longer the device's.
        guard connection == nil, inForeground, record.token == token, record.alias == alias else { return }
        aliasSignature = signature
        let identity = GatewayClientSession.Identity(
            clientKey: configuration.clientKey, deviceToken: token, environment: environment,
            aliasSignature: signature, agent: configuration.agent)
        let (events, sink) = AsyncStream<ConnectionEvent>.makeStream()
        guard
            let opened = try? GatewayConnection(
                endpoint: endpoint, identity: identity,
                handlers: .init(
                    push: { sink.yield(.push($0)) }, revoke: { sink.yield(.revoke($0)) },
                    live: { sink.yield(.live($0)) }, stopped: { code, _ in sink.yield(.stopped(code: code)) }))
        else { return }
        connection = opened
        connectionEvents = Task {
            for await event in events { await self.handle(event, from: opened) }
        }
    }

    private func disconnect() {
        connection?.stop()
        connection = nil
        connectionEvents?.cancel()
        connectionEvents = nil
        live = false
    }

    private func reconnectIfForeground() async {
        guard inForeground else { return }
        disconnect()
        await connect()
        connection?.start()
    }

    private func handle(_ event: ConnectionEvent, from source: GatewayConnection) async {
        guard connection === source else { return }  // a connection replaced since
        switch event {
        case .push(let push):
            await arrivedOnline(push)
        case .revoke(let revocation):
            await revoke(revocation)
        case .live(let value):
            live = value
        case .stopped(let code):
            live = false
            // An expired or refused signature: sign again and reconnect, once per foreground.
            if code.hasPrefix("alias_signature"), !resignedThisForeground {
                resignedThisForeground = true
                aliasSignature = nil
                await reconnectIfForeground()
            }
        }
    }

    func arrivedOnline(_ frame: GatewayPush) async {
        guard let push = OnlinePush(frame) else { return }
        if let revocation = HeraldPayload(payload: frame.payload)?.revocation {
            await revoke(revocation)
            return
        }
        guard shown.firstSight(of: push.pushID) else { return }
        try? storage.save(shown, named: Names.shown)
        if !push.isExpired(at: now()), let notification = push.localNotification {
            try? await center.add(notification)
            if revoked.names(push.pushID) {
                // Its revoke ran while it was being shown.
                await center.removeDelivered(identifiers: [notification.identifier])
            }
        }
        for continuation in pushContinuations.values { continuation.yield(push) }
    }

    // MARK: Through APNs

    /// A notification that arrived through APNs while the app runs (`willPresent`, or
    /// `didReceiveRemoteNotification` for a background push): whether to show it; a recall's
    /// revocation is carried out here.
    public func handleRemoteNotification(userInfo: [AnyHashable: Any]) async -> Presentation {
        guard let herald = HeraldPayload(userInfo: userInfo) else { return .notHerald }
        if let revocation = herald.revocation {
            return .revoked(await revoke(revocation))
        }
        guard shown.firstSight(of: herald.pushID) else { return .duplicate }
        try? storage.save(shown, named: Names.shown)
        return .show
    }

    /// Removes the shown and pending notifications a revoke names.
    @discardableResult
    public func revoke(_ revocation: Revocation) async -> RevokePlan {
        let plan = RevokePlan(
            revoking: revocation, delivered: await center.delivered(), pending: await center.pending())
        if !plan.delivered.isEmpty { await center.removeDelivered(identifiers: plan.delivered) }
        if !plan.pending.isEmpty { await center.removePending(identifiers: plan.pending) }
        revoked.add(revocation)
        if let pushID = revocation.pushID, shown.firstSight(of: pushID) {
            // A revoke that came before its push: the push, if it still arrives, is not shown.
            try? storage.save(shown, named: Names.shown)
        }
        return plan
    }

    // MARK: Engagement

    /// Reports what the user did with a push (opened it, chose an action, dismissed it): queued
    /// on disk, then sent with the others waiting.
    public func report(
        _ type: EngagementEvent.Kind, pushID: UUID, action: String? = nil, textInput: Bool? = nil
    ) async {
        guard let token = record.token else { return }
        queue.append(
            EngagementEvent(
                pushID: pushID, token: token, type: type, action: action, textInput: textInput, occurredAt: now()))
        try? storage.save(queue, named: Names.events)
        await flushEvents()
    }

    /// The events waiting to be sent.
    public var pendingEvents: Int { queue.events.count }

    /// Sends the waiting events in batches until none is left or the server cannot take them now
    /// (then the next call after the wait tries again). `force` ignores the wait.
    public func flushEvents(force: Bool = false) async {
        // One flush at a time (batches are taken from the front of the queue); the running one
        // goes on until the queue is empty, events added meanwhile included.
        guard !flushing else { return }
        if !force, let retryEventsAt, now() < retryEventsAt { return }
        flushing = true
        defer { flushing = false }
        retryEventsAt = nil
        while true {
            let batch = queue.nextBatch(now: now())
            guard !batch.isEmpty else { break }
            let decision: EngagementQueue.Decision
            do {
                _ = try await api.report(batch)
                decision = queue.stored(count: batch.count)
            } catch let error as HeraldAPIError {
                decision = queue.failed(count: batch.count, with: error)
            } catch {
                decision = queue.failed(
                    count: batch.count, with: HeraldAPIError(status: 0, code: "no_answer", message: "\(error)"))
            }
            try? storage.save(queue, named: Names.events)
            if case .retry(let seconds) = decision {
                retryEventsAt = now().addingTimeInterval(TimeInterval(seconds))
                break
            }
        }
    }

    // MARK: Local notifications

    /// Schedules a local notification (a reminder the app sets itself): at a date in a time zone,
    /// once, daily or weekly. One with the identifier of a scheduled one replaces it.
    public func schedule(_ notification: LocalNotification) async throws {
        try await center.add(notification)
    }

    private enum Names {
        static let registration = "registration"
        static let shown = "shown-pushes"
        static let events = "engagement-events"
    }
}

/// The push ids revoked lately (the last 100): a push whose revoke ran while it was being shown
/// is removed once shown. (Not collapse ids: an operator reuses one, "daily", for new pushes.)
struct RecentlyRevoked: Sendable {
    private var pushIDs: [UUID] = []

    mutating func add(_ revocation: Revocation) {
        if let pushID = revocation.pushID { pushIDs = Array((pushIDs + [pushID]).suffix(100)) }
    }

    func names(_ pushID: UUID) -> Bool { pushIDs.contains(pushID) }
}
