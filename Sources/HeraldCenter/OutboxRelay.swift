import HeraldCore
import HeraldKafka
import HeraldMessaging
import HeraldStore
import Logging
import ServiceLifecycle
import Synchronization

/// Publishes the transactional outbox to Kafka: as soon as PostgreSQL notifies that records
/// were added (migration 0037), and every `interval` in any case, the oldest unpublished records
/// (locked, so several relays share the work) are produced and, once the broker acknowledged
/// them, marked published. While the relay cannot listen (its connection lost), the interval
/// alone paces it. A broker outage leaves them in PostgreSQL until it is back: an accepted push
/// is delayed, never lost. Once a minute it deletes records published more than `retention` ago
/// (zero keeps them), so the table does not grow with every push ever sent.
public final class OutboxRelay: Service, Sendable {
    private let outbox: OutboxRepository
    private let producer: KafkaProducer
    private let interval: Duration
    private let retention: Duration
    private let metrics: CenterMetrics?
    /// Whether the last attempt to listen failed (logged once until it listens again).
    private let listenFailing = Atomic<Bool>(false)
    private let logger: Logger

    public init(
        outbox: OutboxRepository, producer: KafkaProducer, interval: Duration, retention: Duration = .zero,
        metrics: CenterMetrics? = nil, logger: Logger
    ) {
        self.outbox = outbox
        self.producer = producer
        self.interval = interval
        self.retention = retention
        self.metrics = metrics
        self.logger = logger
    }

    public func run() async throws {
        let wakeup = OutboxWakeup()
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.listen(waking: wakeup) }
            await publish(woken: wakeup)
            group.cancelAll()
        }
    }

    /// Signals `wakeup` at every commit that added records; when the listening connection fails,
    /// listens again a second later (records added meanwhile are found by the interval's rounds,
    /// and by one round as soon as it listens again). `herald_center_outbox_listening` says
    /// whether it listens.
    private func listen(waking wakeup: OutboxWakeup) async {
        while !Task.isCancelled {
            do {
                try await outbox.listenForAddedRecords(
                    listening: {
                        self.metrics?.outboxListening.store(1, ordering: .relaxed)
                        if self.listenFailing.exchange(false, ordering: .relaxed) {
                            self.logger.info("listening for new outbox records again")
                        }
                        // What was added while nobody listened.
                        wakeup.signal()
                    },
                    added: { wakeup.signal() })
            } catch {
                if Task.isCancelled { return }
                if !listenFailing.exchange(true, ordering: .relaxed) {
                    logger.warning(
                        "cannot listen for new outbox records; publishing every interval until it can",
                        metadata: ["error": "\(HeraldDatabase.describe(error))"])
                }
            }
            metrics?.outboxListening.store(0, ordering: .relaxed)
            try? await Task.sleep(for: .seconds(1))
        }
    }

    private func publish(woken wakeup: OutboxWakeup) async {
        var failing = false
        var lastCleanup = ContinuousClock.now
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            if retention > .zero, ContinuousClock.now - lastCleanup > .seconds(60) {
                lastCleanup = .now
                await deletePublished()
            }
            do {
                var published = 0
                repeat {
                    published = try await outbox.publishBatch(limit: 500) { records in
                        _ = try await self.producer.send(
                            records.map {
                                KafkaProducerMessage(
                                    topic: $0.topic, key: $0.key, value: $0.value,
                                    headers: $0.traceparent.map { [KafkaHeader(traceparent: $0)] } ?? [])
                            })
                    }
                    metrics?.outboxPublished.add(published, ordering: .relaxed)
                } while published == 500
                if failing { logger.info("outbox relay publishing again") }
                failing = false
            } catch {
                if !failing {
                    logger.warning(
                        "cannot publish the outbox; records wait in PostgreSQL",
                        metadata: ["error": "\(HeraldDatabase.describe(error))"])
                }
                failing = true
            }
            await wakeup.wait(upTo: interval)
        }
    }

    /// Deletes what was published more than `retention` ago, 5,000 records a statement.
    func deletePublished() async {
        do {
            var deleted = 0
            repeat {
                deleted = try await outbox.deletePublished(olderThan: retention, limit: 5_000)
                metrics?.outboxDeleted.add(deleted, ordering: .relaxed)
            } while deleted == 5_000 && !Task.isShuttingDownGracefully
        } catch {
            logger.warning(
                "cannot delete published outbox records; trying again in a minute",
                metadata: ["error": "\(HeraldDatabase.describe(error))"])
        }
    }
}
