import HeraldCore
import HeraldStore
import Logging
import ServiceLifecycle

/// Keeps the store from growing with time: every `interval` it deletes finished pushes older than
/// `pushRetention` (their numbers kept per day, ``RetentionRepository``) and audit entries older
/// than `auditRetention`. A zero retention keeps those for ever. Several centers may sweep at once:
/// the pushes each takes are locked, the others skip them.
public struct RetentionSweeper: Service {
    /// Pushes deleted per statement: each takes its failed deliveries and batches with it.
    static let pushesPerStatement = 100
    /// Statements per sweep at most, so one sweep never holds on for long; the next one goes on.
    static let statementsPerSweep = 100

    let retention: RetentionRepository
    let audit: AuditRepository
    let pushRetention: Duration
    let auditRetention: Duration
    let interval: Duration
    let metrics: CenterMetrics?
    let logger: Logger

    public init(
        retention: RetentionRepository, audit: AuditRepository, pushRetention: Duration, auditRetention: Duration,
        interval: Duration, metrics: CenterMetrics?, logger: Logger
    ) {
        self.retention = retention
        self.audit = audit
        self.pushRetention = pushRetention
        self.auditRetention = auditRetention
        self.interval = interval
        self.metrics = metrics
        self.logger = logger
    }

    public func run() async throws {
        guard pushRetention > .zero || auditRetention > .zero else { return }
        await reportAuditFloor()
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            await sweep()
            await sleepUntilGracefulShutdown(for: interval)
        }
    }

    /// Says once, at start, when the database's own floor (set by the tables' owner) keeps audit
    /// entries longer than this center was configured to: the floor wins.
    func reportAuditFloor() async {
        guard auditRetention > .zero, let floor = try? await audit.keptAtLeast(), floor > auditRetention else {
            return
        }
        logger.notice(
            "audit entries are kept longer than configured: the database's owner set a longer floor (herald_audit_policy, docs/security.md)",
            metadata: [
                "configured_days": "\(auditRetention.components.seconds / 86_400)",
                "database_floor_days": "\(floor.components.seconds / 86_400)",
            ])
    }

    /// One sweep of both tables. A database that does not answer is tried again next time.
    public func sweep() async {
        do {
            if pushRetention > .zero {
                var statements = 0
                var deleted = 0
                repeat {
                    deleted = try await retention.purgePushes(
                        olderThan: pushRetention, limit: Self.pushesPerStatement)
                    metrics?.pushesPurged.add(deleted, ordering: .relaxed)
                    statements += 1
                } while deleted >= Self.pushesPerStatement && statements < Self.statementsPerSweep
                    && !Task.isShuttingDownGracefully
            }
            if auditRetention > .zero {
                let deleted = try await audit.deleteOlder(than: auditRetention)
                metrics?.auditEventsDeleted.add(deleted, ordering: .relaxed)
            }
        } catch {
            logger.warning(
                "retention could not delete old pushes or audit entries; trying again next time",
                metadata: ["error": "\(HeraldDatabase.describe(error))"])
        }
    }
}
