import Foundation
import HeraldStore
import Logging
import ServiceLifecycle

/// Counts the herald-api processes alive (`api_replicas`) every `interval` and gives the rate
/// limiter its share: each process allows an app 1/N of its limit. A process that stops
/// gracefully removes its row, so the others take its share at once; one that dies is counted
/// until `3 × interval` passes. While PostgreSQL does not answer, the last count holds.
struct APIReplicaHeartbeat: Service {
    let replicas: APIReplicaRepository
    let rateLimiter: RateLimiter
    let interval: Duration
    let name: String
    let logger: Logger
    let id = UUID()

    func run() async throws {
        var failing = false
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            do {
                let count = try await replicas.heartbeat(id: id, name: name, aliveWithin: interval * 3)
                let previous = rateLimiter.replicas.exchange(count, ordering: .relaxed)
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
            try? await Task.sleep(for: interval)
        }
        try? await replicas.leave(id: id)
    }
}
