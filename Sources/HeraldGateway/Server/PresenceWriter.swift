import Foundation
import HeraldMetrics
import HeraldStore
import HeraldTiming
import Logging
import ServiceLifecycle
import Synchronization

/// Keeps this gateway's presence in PostgreSQL (docs/gateway.md, "Presence"): renews its lease
/// every third of the lease, and writes the directory's connects and leaves in batches every
/// flush interval (100,000 connects are a few hundred statements, not 100,000 transactions). A
/// write that fails is tried again with the next batch; while PostgreSQL does not answer the
/// lease runs out and the center stops routing here, so pushes go through APNs. At a graceful
/// stop (after the drain) it gives the lease up, and its rows with it.
final class PresenceWriter: Service, Sendable {
    let gatewayID: UUID
    private let name: String
    private let deliveryAddress: String
    private let repository: GatewayPresenceRepository
    private let directory: DeviceDirectory
    private let lease: Duration
    private let flushEvery: Duration
    private let logger: Logger
    private let renewedAt = Mutex<ContinuousClock.Instant?>(nil)
    private let metrics: GatewayMetrics

    init(
        gatewayID: UUID, name: String, deliveryAddress: String, repository: GatewayPresenceRepository,
        directory: DeviceDirectory,
        lease: Duration, flushEvery: Duration, metrics: GatewayMetrics, logger: Logger
    ) {
        self.metrics = metrics
        self.gatewayID = gatewayID
        self.name = name
        self.deliveryAddress = deliveryAddress
        self.repository = repository
        self.directory = directory
        self.lease = lease
        self.flushEvery = flushEvery
        self.logger = logger
    }

    func run() async throws {
        var nextRenewal = ContinuousClock.now
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            if ContinuousClock.now >= nextRenewal {
                do {
                    let made = try await repository.renew(
                        id: gatewayID, name: name, deliveryAddress: deliveryAddress, lease: lease)
                    // A row made anew after the first (another gateway removed it, rows and
                    // all, while PostgreSQL was away for over a minute): write every live
                    // connection again, or its device would not be routed here until it reconnects.
                    if made { directory.requeueAll() }
                    renewedAt.withLock { $0 = .now }
                    nextRenewal = .now + lease / 3
                } catch {
                    logger.warning(
                        "gateway presence lease not renewed; routes to this gateway expire with it",
                        metadata: ["error": "\(HeraldDatabase.describe(error))"])
                    nextRenewal = .now + .seconds(1)
                }
            }
            // Rows written under a lease that ran out would not route (and would welcome
            // connections no sender can reach): after an outage, the lease is renewed first.
            if leaseHeld { await flush() }
            try? await Task.sleep(for: flushEvery)
        }
        await flush()
        do {
            try await repository.leave(id: gatewayID)
        } catch {
            logger.warning(
                "gateway presence not given up at stop; it expires with the lease",
                metadata: ["error": "\(HeraldDatabase.describe(error))"])
        }
    }

    /// Writes the changes the directory holds, if any; the connections waiting for them are
    /// welcomed.
    func flush() async {
        let (changes, batch) = directory.takeChanges()
        guard !changes.isEmpty else {
            directory.written(batch)
            return
        }
        do {
            try await repository.record(changes, gatewayID: gatewayID)
            metrics.presenceBatches.add(1, ordering: .relaxed)
            directory.written(batch)
        } catch {
            metrics.presenceWriteFailures.add(1, ordering: .relaxed)
            directory.restore(changes)
            logger.warning(
                "gateway presence not written; tried again with the next batch",
                metadata: ["changes": "\(changes.count)", "error": "\(HeraldDatabase.describe(error))"])
        }
    }

    /// Whether the lease was renewed within its length.
    private var leaseHeld: Bool {
        guard let renewed = renewedAt.withLock({ $0 }) else { return false }
        return ContinuousClock.now - renewed < lease
    }

    /// `/readyz`: the lease was renewed within its length.
    var readiness: HealthCheck {
        HealthCheck("presence_lease") { [self] in
            guard let renewed = renewedAt.withLock({ $0 }) else { return .fail("no presence lease yet") }
            let age = ContinuousClock.now - renewed
            return age < lease
                ? .pass("renewed \(age.wholeMilliseconds) ms ago")
                : .fail("presence lease not renewed for \(age.wholeMilliseconds) ms: is PostgreSQL reachable?")
        }
    }
}
