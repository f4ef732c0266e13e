import HeraldCore
import HeraldStore
import Logging
import ServiceLifecycle

/// Keeps the device counts' reads short: every `interval` it folds the changes that device
/// registrations, imports, invalidations and deletions appended (``DeviceCountRepository``) into
/// the counts. The counts are exact without it — reads add the changes not folded yet — but each
/// read would add more of them. Several centers may fold at once.
public struct DeviceCountFolder: Service {
    /// Changes folded per statement.
    static let changesPerStatement = 10_000
    /// Statements per round at most; a larger backlog goes on in the next round.
    static let statementsPerRound = 50

    let counts: DeviceCountRepository
    let interval: Duration
    let metrics: CenterMetrics?
    let logger: Logger

    public init(counts: DeviceCountRepository, interval: Duration, metrics: CenterMetrics?, logger: Logger) {
        self.counts = counts
        self.interval = interval
        self.metrics = metrics
        self.logger = logger
    }

    public func run() async throws {
        guard interval > .zero else { return }
        var failing = false
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            do {
                try await foldBacklog()
                if failing { logger.info("device counts folding again") }
                failing = false
            } catch {
                if !failing {
                    logger.warning(
                        "cannot fold the device counts' changes; the counts stay exact, their reads get slower",
                        metadata: ["error": "\(HeraldDatabase.describe(error))"])
                }
                failing = true
            }
            await sleepUntilGracefulShutdown(for: interval)
        }
    }

    /// One round: folds until the backlog is empty or the round's statements are used up.
    public func foldBacklog() async throws {
        var statements = 0
        var folded = 0
        repeat {
            folded = try await counts.fold(limit: Self.changesPerStatement)
            metrics?.deviceCountChangesFolded.add(folded, ordering: .relaxed)
            statements += 1
        } while folded == Self.changesPerStatement && statements < Self.statementsPerRound
            && !Task.isShuttingDownGracefully
    }
}
