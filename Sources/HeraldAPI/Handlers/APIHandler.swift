import Foundation
import HeraldAPIContract
import HeraldAccess
import HeraldCore
import HeraldDomain
import HeraldStore
import Logging
import OpenAPIRuntime
import PostgresNIO
import Synchronization

/// The Open API's operations (Schemas/openapi.yaml), one extension per resource. The caller
/// is already authenticated and rate-limited (``AuthenticationMiddleware``); errors are thrown
/// as ``APIError`` and answered by ``ErrorResponseMiddleware``.
struct APIHandler: APIProtocol {
    let database: PostgresClient
    let apps: AppRepository
    let keys: APIKeyRepository
    let credentials: CredentialRepository
    /// Apps' identity secrets (the keys of alias signatures).
    let identitySecrets: IdentitySecretRepository
    /// The append-only audit log.
    let audit: AuditRepository
    /// Webhook endpoints, their events and deliveries.
    let webhooks: WebhookRepository
    /// Saved segments: named filters over devices.
    let segments: SegmentRepository
    /// Stored notification templates.
    let templates: TemplateRepository
    /// Recurring schedules.
    let schedules: ScheduleRepository
    let devices: DeviceRepository
    /// Devices counted by environment, status and tag, kept as they change.
    let deviceCounts: DeviceCountRepository
    /// Each app's active devices against its quota.
    let deviceQuota: DeviceQuota
    /// Device imports: their own connections and slots.
    let imports: DeviceImports
    let pushes: PushRepository
    /// What devices report about the pushes they were sent, and the counts kept of it.
    let engagement: EngagementRepository
    /// New pushes go through it: under load, pushes that arrive together share a statement.
    let pushWriter: PushWriter
    /// Live progress streams: one poll per watched push.
    let progressHub: PushProgressHub
    /// Pause and resume of a push's fan-out.
    let claims: FanoutClaimRepository
    let audiences: AudienceRepository
    let authenticator: KeyAuthenticator
    /// Seals APNs private keys; `nil` when no master key is configured (credentials then cannot be stored).
    let cipher: CredentialCipher?
    let settings: APISettings
    let metrics: APIMetrics
    let deadlines: RequestDeadlines
    /// The last readiness answer, kept a second.
    let readiness = ReadinessCache(keep: .seconds(1))
    let logger: Logger

    // MARK: System

    func getHealth(_ input: Operations.GetHealth.Input) async throws -> Operations.GetHealth.Output {
        .ok(.init(body: .json(.init(status: "ok"))))
    }

    func getReadiness(_ input: Operations.GetReadiness.Input) async throws -> Operations.GetReadiness.Output {
        // /readyz is open to anyone: its answer is kept a second, so a flood of probes asks
        // PostgreSQL once a second, not once a request.
        let ready = await readiness.answer { [deadlines, database, logger] in
            do {
                try await deadlines.guarding(timeout: min(.seconds(2), deadlines.timeout / 2)) {
                    let rows = try await database.query("SELECT 1", logger: logger)
                    for try await _ in rows.decode(Int32.self) {}
                }
                return true
            } catch {
                return false
            }
        }
        guard ready else { throw APIError.unavailable }
        return .ok(.init(body: .json(.init(status: "ready"))))
    }

    func getMetrics(_ input: Operations.GetMetrics.Input) async throws -> Operations.GetMetrics.Output {
        guard settings.metricsOnAPIPort else {
            throw APIError(
                .notFound, code: .notFound,
                message:
                    "the metrics are served on the operations port (HERALD_API_METRICS_PORT), not here; HERALD_API_METRICS_ON_API_PORT=true serves them on this port too"
            )
        }
        return .ok(.init(body: .plainText(HTTPBody(metrics.prometheusText()))))
    }

    // MARK: Helpers shared by the resources

    /// A UUID from a path or query parameter, or a 400 naming it.
    static func uuid(_ text: String, _ field: String) throws(APIError) -> UUID {
        guard let id = UUID(uuidString: text) else {
            throw APIError.badRequest("\(field) must be a UUID", field: field)
        }
        return id
    }

    /// A page size: 1 to 1000, default 100.
    static func pageSize(_ limit: Int?) throws(APIError) -> Int {
        guard let limit else { return 100 }
        guard (1...1000).contains(limit) else { throw APIError.badRequest("limit is 1 to 1000", field: "limit") }
        return limit
    }
}

/// Where device imports run: a repository on a connection pool of their own (slow uploads hold a
/// transaction open), and the slots that bound how many run at once.
struct DeviceImports: Sendable {
    let devices: DeviceRepository
    let slots: ImportSlots
}

/// A count of imports running, up to `limit`; one more is refused, not queued.
final class ImportSlots: Sendable {
    let limit: Int
    private let running = Mutex(0)

    init(limit: Int) { self.limit = limit }

    func tryAcquire() -> Bool {
        running.withLock { running in
            guard running < limit else { return false }
            running += 1
            return true
        }
    }

    func release() { running.withLock { $0 -= 1 } }
}

/// A readiness answer kept for `keep`: callers within it get the last answer; the first after it
/// asks again (others at that moment get the last answer meanwhile, so one probe at a time asks).
final class ReadinessCache: Sendable {
    private struct State {
        var ready = false
        var answeredAt: ContinuousClock.Instant?
        var asking = false
    }

    let keep: Duration
    private let state = Mutex(State())

    init(keep: Duration) { self.keep = keep }

    func answer(_ ask: @Sendable () async -> Bool) async -> Bool {
        let now = ContinuousClock.now
        let cached: Bool? = state.withLock { state in
            // One probe asks at a time; the others meanwhile get the last answer (before the
            // first one: not ready yet).
            if state.asking { return state.ready }
            if let at = state.answeredAt, now - at < keep { return state.ready }
            state.asking = true
            return nil
        }
        if let cached { return cached }
        let ready = await ask()
        state.withLock { state in
            state.ready = ready
            state.answeredAt = .now
            state.asking = false
        }
        return ready
    }
}
