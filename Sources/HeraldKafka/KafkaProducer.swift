import CRdKafka
import Foundation
import HeraldTiming
import Logging
import ServiceLifecycle
import Synchronization

/// Produces records to Kafka and reports when the broker acknowledged them.
///
/// librdkafka batches, compresses and retries; with ``KafkaProducerConfiguration/enableIdempotence``
/// its retries never duplicate or reorder a record. A dedicated thread serves delivery reports
/// from the moment the producer is created, so ``send(_:)`` works before ``run()`` is called.
/// When librdkafka's queue is full (``KafkaProducerConfiguration/maximumQueuedMessages``),
/// ``send(_:)`` waits for room: that is the producer's backpressure.
///
/// - Important: run it in a `ServiceGroup` (or call ``run()``): on graceful shutdown it flushes
///   what is not yet acknowledged, waiting up to ``KafkaProducerConfiguration/flushTimeout``.
public final class KafkaProducer: Service, Sendable {
    private let client: RdKafkaClient
    private let logger: Logger
    private let lifecycle = Lifecycle()

    /// New records are accepted until shutdown starts.
    private var accepting: Bool { lifecycle.state.withLock(\.acceptsRecords) }

    /// The producer's ``KafkaProducerLifecycle``, shared with its delivery-report thread.
    private final class Lifecycle: Sendable {
        let state = Mutex(KafkaProducerLifecycle<CheckedContinuation<Void, Never>>())
    }

    /// Creates a producer and starts its delivery-report thread.
    /// - Throws: ``KafkaError`` `.configuration` when librdkafka refuses a property.
    public init(configuration: KafkaProducerConfiguration, logger: Logger) throws {
        self.logger = logger
        self.client = try RdKafkaClient.make(role: .producer, properties: configuration.properties, logger: logger)
        let thread = Thread { [client, lifecycle, configuration, logger] in
            while lifecycle.state.withLock(\.acceptsRecords) {
                client.poll(timeoutMilliseconds: 100)
            }
            let remaining = client.flush(
                timeoutMilliseconds: Int32(clamping: configuration.flushTimeout.wholeMilliseconds))
            if remaining > 0 {
                logger.error(
                    "Kafka producer shut down with records not acknowledged; their senders get an error",
                    metadata: ["records": "\(remaining)"])
                client.purgeUnacknowledged()
            }
            client.destroy()
            for waiter in lifecycle.state.withLock({ $0.threadFinished() }) { waiter.resume() }
        }
        thread.name = "herald-kafka-producer"
        thread.start()
    }

    deinit {
        lifecycle.state.withLock { $0.stopRequested() }
    }

    /// Produces one record and returns when the broker acknowledged it.
    /// - Throws: ``KafkaError``: not acknowledged within the delivery timeout, refused by the
    ///   broker (for example an unknown topic), or the producer is shut down.
    @discardableResult
    public func send(_ message: KafkaProducerMessage) async throws -> KafkaDeliveryReport {
        try await send(CollectionOfOne(message))
    }

    /// Produces records and returns when the broker acknowledged all of them.
    ///
    /// Records with the same key keep their order. If one fails, the others may still have
    /// been written: callers retry the whole group, which is why Herald's record ids are
    /// deterministic.
    /// - Returns: the report of the last record acknowledged.
    /// - Throws: the first ``KafkaError`` among the records.
    @discardableResult
    public func send(_ messages: some Collection<KafkaProducerMessage>) async throws -> KafkaDeliveryReport {
        guard !messages.isEmpty else { return KafkaDeliveryReport(partition: -1, offset: -1) }
        guard accepting else { throw KafkaError.shutDown }
        let group = KafkaDeliveryGroup(count: messages.count)
        var enqueued = 0
        do {
            for message in messages {
                try await enqueue(message, group: group)
                enqueued += 1
            }
        } catch let error as KafkaError {
            group.failed(error, count: messages.count - enqueued)
        }
        return try await group.wait()
    }

    /// Learns `topics`' partitions and leaders before the first record is produced to them.
    ///
    /// Without it librdkafka discovers a topic when its first record arrives and holds that
    /// record (and all that follow) meanwhile: about a second against the development broker,
    /// which is most of a million-device fan-out. Runs on a thread of its own. When the brokers
    /// do not answer within `timeout` it logs a warning and returns: producing still works,
    /// librdkafka keeps trying.
    public func prepare(topics: [String], timeout: Duration = .seconds(2)) async {
        let client = self.client
        let failure: KafkaError? = await withCheckedContinuation { continuation in
            let thread = Thread {
                continuation.resume(
                    returning: topics.lazy.compactMap {
                        client.fetchMetadata(topic: $0, timeoutMilliseconds: Int32(clamping: timeout.wholeMilliseconds))
                    }.first)
            }
            thread.name = "herald-kafka-metadata"
            thread.start()
        }
        if let failure {
            logger.warning(
                "no topic metadata yet; the first records wait while librdkafka learns it",
                metadata: ["topics": "\(topics)", "error": "\(failure)"])
        }
    }

    private func enqueue(_ message: KafkaProducerMessage, group: KafkaDeliveryGroup) async throws {
        var waits = Self.queueFullBackoff.delays()
        while true {
            // Retained for librdkafka; released by the delivery-report callback or below.
            let opaque = Unmanaged.passRetained(group).toOpaque()
            guard
                let error = client.produce(
                    topic: message.topic, partition: message.partition,
                    key: message.key, value: message.value, headers: message.headers, opaque: opaque)
            else {
                return
            }
            Unmanaged<KafkaDeliveryGroup>.fromOpaque(opaque).release()
            guard error.code == RD_KAFKA_RESP_ERR__QUEUE_FULL.rawValue else { throw error }
            // librdkafka's queue is full: wait for acknowledgements to make room.
            guard accepting else { throw KafkaError.shutDown }
            try? await Task.sleep(for: waits.next())
        }
    }

    /// Waits while librdkafka's queue is full, for acknowledgements to make room.
    static let queueFullBackoff = Backoff(initial: .microseconds(200), maximum: .milliseconds(20))

    /// How this client is doing (statistics, fatal error, last poll, assignment): cheap, no broker
    /// round trip.
    public var health: KafkaClientHealth { client.health }

    /// The values librdkafka holds for `properties`, read back from this producer's handle (the
    /// configuration it really runs with); secret properties are never read back.
    public func configuredValues(_ properties: [String]) -> [String: String] {
        var values: [String: String] = [:]
        for property in properties where !KafkaClientConfiguration.isSensitive(property) {
            values[property] = client.configuredValue(property)
        }
        return values
    }

    /// Runs until graceful shutdown (or cancellation), then flushes and stops.
    public func run() async throws {
        try? await gracefulShutdown()
        await shutdown()
    }

    /// Refuses new records, waits for the outstanding ones to be acknowledged (up to the flush
    /// timeout; the rest fail), and releases librdkafka. Idempotent.
    public func shutdown() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            switch lifecycle.state.withLock({ $0.shutdown(notifying: continuation) }) {
            case .wait: break
            case .resume: continuation.resume()
            }
        }
        logger.debug("Kafka producer stopped")
    }
}
