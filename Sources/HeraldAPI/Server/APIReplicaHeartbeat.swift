import Foundation
import HeraldAccess
import HeraldCore
import HeraldStore
import Logging
import ServiceLifecycle

/// Counts the herald-api processes alive (`api_replicas`) every `interval` and gives the rate
/// limiters their share: each process allows an app 1/N of its limits. A process that stops
/// gracefully removes its row, so the others take its share at once; one that dies is counted
/// until `3 × interval` passes. While PostgreSQL does not answer, the last count holds.
struct APIReplicaHeartbeat: Service {
    let replicas: APIReplicaRepository
    /// The server keys' and the client keys' limiters.
    let rateLimiters: [RateLimiter]
    let interval: Duration
    let name: String
    let logger: Logger
    let id = UUID()

    func run() async throws {
        var failing = false
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            do {
                let count = try await replicas.heartbeat(id: id, name: name, aliveWithin: interval * 3)
                var previous = count
                for limiter in rateLimiters { previous = limiter.replicas.exchange(count, ordering: .relaxed) }
                if previous != count {
                    logger.info(
                        "rate limits shared among the herald-api processes alive",
                        metadata: ["processes": "\(count)"])
                }
                failing = false
            } catch {
                if !failing {
                    logger.warning(
                        "cannot count the herald-api processes; rate limits keep their last share",
                        metadata: ["error": "\(error)"])
                }
                failing = true
            }
            await sleepUntilGracefulShutdown(for: interval)
        }
        try? await replicas.leave(id: id)
    }
}
