import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldStore
import HeraldTiming
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import ServiceLifecycle
import Synchronization

/// Delivers webhook events (docs/webhooks.md): claims due deliveries from PostgreSQL, POSTs each
/// event signed with its endpoint's secret, and records what came of it — delivered, tried again
/// later with back-off, or dead once the retry window is over. Each delivery has its own schedule,
/// so an endpoint that hangs or fails holds back only its own deliveries (at most its
/// `max_concurrency` at a time); several centers deliver side by side.
public final class WebhookDispatcher: Service, Sendable {
    public struct Settings: Sendable {
        /// How often due deliveries are looked for when none were found.
        public var pollInterval: Duration = .milliseconds(500)
        // The configured ones default to the center's configuration defaults (CenterSettings).
        /// Requests in flight in this center at most.
        public var maxInFlight = CenterSettings.defaultWebhookMaxInFlight
        /// Of those, one app's at most.
        public var maxInFlightPerApp = CenterSettings.defaultWebhookMaxInFlightPerApp(
            of: CenterSettings.defaultWebhookMaxInFlight)
        /// A request without an answer in this time failed.
        public var requestTimeout = CenterSettings.defaultWebhookTimeout
        /// How long after its event a delivery is tried before it is dead.
        public var retryWindow = CenterSettings.defaultWebhookRetryWindow
        /// The first retry's delay (its ceiling: Herald's ``Backoff`` waits between half and all
        /// of it); each next one doubles, up to `maximumRetryDelay`.
        public var firstRetryDelay = CenterSettings.defaultWebhookFirstRetry
        public var maximumRetryDelay: Duration = .seconds(3600)
        /// Whether requests may go to addresses that are not public (loopback, private ranges,
        /// link-local): off in production, on for the dev stack and tests whose receivers listen on
        /// loopback.
        public var allowPrivateNetworks = false
        /// Attempts are kept this long; events (with their deliveries) once none is pending.
        public var attemptRetention: Duration = .seconds(7 * 86_400)
        public var eventRetention: Duration = .seconds(30 * 86_400)

        public init() {}
    }

    private let settings: Settings
    private let center: String
    private let webhooks: WebhookRepository
    private let cipher: CredentialCipher?
    private let http: HTTPClient
    private let httpConfiguration: HTTPClient.Configuration
    private let resolver: WebhookAddressCheck.Resolver
    private let logger: Logger
    private let metrics: CenterMetrics
    private let clock: @Sendable () -> Date
    private let random: @Sendable () -> Double
    /// Each app's requests in flight in this center, for the claim's per-app bound.
    private let appInFlight = Mutex<[UUID: Int]>([:])

    public convenience init(
        settings: Settings = Settings(), center: String, webhooks: WebhookRepository, cipher: CredentialCipher?,
        metrics: CenterMetrics = CenterMetrics(), logger: Logger
    ) {
        self.init(
            settings: settings, center: center, webhooks: webhooks, cipher: cipher, metrics: metrics,
            resolver: WebhookAddressCheck.systemResolver, logger: logger)
    }

    /// - Parameters:
    ///   - resolver: how hosts are resolved (tests name hosts no DNS knows).
    ///   - clock: the wall clock retries are timed by.
    ///   - random: a number in 0..<1 for each retry's jitter.
    init(
        settings: Settings, center: String, webhooks: WebhookRepository, cipher: CredentialCipher?,
        metrics: CenterMetrics, resolver: @escaping WebhookAddressCheck.Resolver, logger: Logger,
        clock: @escaping @Sendable () -> Date = Date.init,
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }
    ) {
        self.clock = clock
        self.random = random
        self.settings = settings
        self.metrics = metrics
        self.center = center
        self.webhooks = webhooks
        self.cipher = cipher
        self.resolver = resolver
        self.logger = logger
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        configuration.timeout = .init(
            connect: .seconds(5), read: .seconds(Int64(settings.requestTimeout.wholeMilliseconds / 1000)))
        httpConfiguration = configuration
        http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    public func run() async throws {
        await withDiscardingTaskGroup { group in
            var lastPurge = ContinuousClock.now - .seconds(3600)
            var lastEngagementReport = ContinuousClock.now - .seconds(1)
            while !Task.isShuttingDownGracefully && !Task.isCancelled {
                if ContinuousClock.now - lastPurge >= .seconds(3600) {
                    lastPurge = .now
                    await purge()
                }
                if ContinuousClock.now - lastEngagementReport >= .seconds(1) {
                    lastEngagementReport = .now
                    await reportEngagement()
                }
                let free = settings.maxInFlight - metrics.webhookInFlight.load(ordering: .relaxed)
                var claimed: [WebhookDelivery] = []
                if free > 0 {
                    do {
                        claimed = try await webhooks.claimDue(
                            limit: free, by: center, lease: settings.requestTimeout * 3,
                            appInFlight: appInFlight.withLock { $0 }, appShare: settings.maxInFlightPerApp)
                    } catch {
                        logger.warning(
                            "cannot claim webhook deliveries; trying again",
                            metadata: ["error": "\(HeraldDatabase.describe(error))"])
                    }
                }
                for delivery in claimed {
                    metrics.webhookInFlight.add(1, ordering: .relaxed)
                    appInFlight.withLock { $0[delivery.appID, default: 0] += 1 }
                    group.addTask {
                        defer {
                            self.appInFlight.withLock { inFlight in
                                inFlight[delivery.appID, default: 1] -= 1
                                if inFlight[delivery.appID] == 0 { inFlight[delivery.appID] = nil }
                            }
                            self.metrics.webhookInFlight.subtract(1, ordering: .relaxed)
                        }
                        await self.deliver(delivery)
                    }
                }
                if claimed.isEmpty { await sleepUntilGracefulShutdown(for: settings.pollInterval) }
            }
        }
        try? await http.shutdown()
    }

    /// The `push.engagement` events whose time came (docs/webhooks.md): each push's totals, at
    /// most one a push per `EngagementRepository.reportInterval`.
    func reportEngagement() async {
        do {
            while try await webhooks.writeDueEngagementEvents(limit: 100) == 100, !Task.isShuttingDownGracefully {}
        } catch {
            logger.warning(
                "cannot write push.engagement webhook events; trying again",
                metadata: ["error": "\(HeraldDatabase.describe(error))"])
        }
    }

    /// Old attempts and finished events go (10,000 rows a statement, up to 100 statements an hour).
    func purge() async {
        do {
            for _ in 0..<100 {
                let purged = try await webhooks.purge(
                    attemptsOlderThan: settings.attemptRetention, eventsOlderThan: settings.eventRetention,
                    limit: 10_000)
                if purged < 10_000 || Task.isShuttingDownGracefully { break }
            }
        } catch {
            logger.warning(
                "cannot delete old webhook attempts and events; trying again in an hour",
                metadata: ["error": "\(HeraldDatabase.describe(error))"])
        }
    }

    /// One attempt of one delivery, and its record.
    func deliver(_ delivery: WebhookDelivery) async {
        let body = Self.body(delivery)
        let started = ContinuousClock.now
        var outcome: Outcome
        switch await WebhookAddressCheck.decide(
            url: delivery.url, allowPrivateNetworks: settings.allowPrivateNetworks, resolver: resolver)
        {
        case .refused(let tenant, let detail):
            outcome = Outcome(failure: tenant, cause: detail)
        case .connect(let host, let address):
            outcome = await send(delivery, body: body, host: host, address: address)
        }
        let status = outcome.status
        let delivered = status.map { (200..<300).contains($0) } ?? false
        let retryAt = delivered ? nil : retryTime(delivery)
        if delivered {
            metrics.webhookDelivered.add(1, ordering: .relaxed)
        } else if retryAt == nil {
            metrics.webhookDead.add(1, ordering: .relaxed)
        } else {
            metrics.webhookRetried.add(1, ordering: .relaxed)
        }
        if !delivered {
            logger.info(
                retryAt == nil
                    ? "webhook delivery dead: retry window over" : "webhook delivery failed; tried again later",
                metadata: [
                    "endpoint": "\(delivery.endpointID)", "event": "\(delivery.eventID)",
                    "status": "\(status.map(String.init) ?? "-")",
                    "error": "\(outcome.cause ?? outcome.failure ?? "-")",
                ])
        }
        do {
            try await webhooks.recordAttempt(
                endpointID: delivery.endpointID, eventID: delivery.eventID, by: center, status: status,
                error: outcome.failure, duration: ContinuousClock.now - started, delivered: delivered, retryAt: retryAt)
        } catch {
            // The lease runs out and the delivery is tried again: at least once.
            logger.warning(
                "cannot record a webhook attempt; the delivery will be tried again",
                metadata: ["error": "\(HeraldDatabase.describe(error))"])
        }
    }

    /// What an attempt came to: the endpoint's status, or what went wrong — `failure` for the
    /// app's attempt log (a class of error), `cause` for herald-center's log (the error itself).
    struct Outcome {
        var status: Int?
        var failure: String?
        var cause: String?
    }

    /// The request, sent to `address` when the check resolved one: a client of its own connects
    /// there (TLS verifying `host`), so nothing resolves the name a second time.
    private func send(_ delivery: WebhookDelivery, body: [UInt8], host: String, address: String?) async -> Outcome {
        guard let address else { return await attempt(delivery, body: body, on: http) }
        var configuration = httpConfiguration
        configuration.dnsOverride = [host: address]
        let pinned = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let outcome = await attempt(delivery, body: body, on: pinned)
        try? await pinned.shutdown()
        return outcome
    }

    /// The request itself: signed, sent, its status or what went wrong.
    private func attempt(_ delivery: WebhookDelivery, body: [UInt8], on client: HTTPClient) async -> Outcome {
        do {
            let secrets = try delivery.secrets.map { secret -> [UInt8] in
                guard let cipher else {
                    throw WebhookError("no HERALD_MASTER_KEY: the endpoint's secret cannot be opened")
                }
                return try cipher.open(
                    secret.sealed, keyID: secret.sealingKeyID,
                    associatedData: WebhookSecret.associatedData(
                        endpointID: delivery.endpointID, sealingKeyID: secret.sealingKeyID))
            }
            var request = HTTPClientRequest(url: delivery.url)
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            request.headers.add(name: "User-Agent", value: "Herald-Webhooks/1")
            request.headers.add(name: "Herald-Event-Id", value: delivery.eventID.uuidString.lowercased())
            request.headers.add(
                name: WebhookSignature.headerName,
                value: WebhookSignature.header(
                    body: body, timestamp: Int64(clock().timeIntervalSince1970), secrets: secrets))
            request.body = .bytes(ByteBuffer(bytes: body))
            let response = try await client.execute(
                request, timeout: .milliseconds(Int64(settings.requestTimeout.wholeMilliseconds)))
            _ = try? await response.body.collect(upTo: 64 * 1024)
            return Outcome(status: Int(response.status.code))
        } catch let error as WebhookError {
            return Outcome(failure: "\(error)")
        } catch {
            return Outcome(failure: WebhookFailure.tenantClass(of: error), cause: "\(error)")
        }
    }

    /// When to try again after `delivery.attempts + 1` attempts, or nil once past the window.
    func retryTime(_ delivery: WebhookDelivery) -> Date? {
        Self.retryTime(
            afterAttempts: delivery.attempts + 1, windowStart: delivery.retryWindowStart, settings: settings,
            now: clock(), unit: random())
    }

    /// When to try again after `attempts` failed attempts, or nil once that is past the retry
    /// window opened at `windowStart`: Herald's ``Backoff`` from `firstRetryDelay` doubling to
    /// `maximumRetryDelay`, its equal jitter drawn from `unit` (0..<1).
    static func retryTime(afterAttempts attempts: Int, windowStart: Date, settings: Settings, now: Date, unit: Double)
        -> Date?
    {
        let backoff = Backoff(initial: settings.firstRetryDelay, maximum: settings.maximumRetryDelay)
        let at = now.addingTimeInterval(backoff.delay(afterFailures: attempts, unit: unit).fractionalSeconds)
        let deadline = windowStart.addingTimeInterval(settings.retryWindow.fractionalSeconds)
        return at > deadline ? nil : at
    }

    /// The request body: the event with its id, type, app and time, and its data as stored.
    static func body(_ delivery: WebhookDelivery) -> [UInt8] {
        let created = ISO8601DateFormatter().string(from: delivery.createdAt)
        return Array(
            """
            {"id":"\(delivery.eventID.uuidString.lowercased())","type":"\(delivery.type)",\
            "app_id":"\(delivery.appID.uuidString.lowercased())","created_at":"\(created)","data":\(delivery.data)}
            """.utf8)
    }
}

/// The class of a failed request an app's attempt log shows: what the endpoint's owner can act
/// on, without the center's own error text (addresses, library internals); herald-center logs
/// the error itself.
enum WebhookFailure {
    static func tenantClass(of error: any Error) -> String {
        switch error {
        case let error as HTTPClientError:
            switch error {
            case .connectTimeout: return "connection timed out"
            case .deadlineExceeded, .readTimeout: return "no answer within the request timeout"
            case .remoteConnectionClosed: return "the endpoint closed the connection before answering"
            case .bodyLengthMismatch: return "the endpoint's answer was not valid HTTP"
            default: return "the request failed"
            }
        case is NIOSSLError, is BoringSSLError:
            return "TLS failed (the endpoint's certificate or TLS version)"
        case let error as IOError where error.errnoCode == ECONNREFUSED:
            return "connection refused"
        case let error as NIOConnectionError:
            return error.connectionErrors.contains {
                ($0.error as? IOError)?.errnoCode == ECONNREFUSED
            } ? "connection refused" : "cannot connect"
        default:
            return "the request failed"
        }
    }
}

struct WebhookError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
