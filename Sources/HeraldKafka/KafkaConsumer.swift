import HeraldTiming
import Logging
import ServiceLifecycle
import Synchronization

/// A consumer-group member that hands out records on demand and stores offsets only when told.
///
/// Records are pulled through ``messages``: each pull takes up to
/// ``KafkaConsumerConfiguration/maximumBatchSize`` records from librdkafka's fetch queue, which
/// is the real buffer (bounded by librdkafka's `queued.max.messages.kbytes`); nothing unbounded
/// is kept in Swift. An offset is stored only by ``storeOffset(for:)`` after the caller handled
/// the record, and stored offsets are committed every
/// ``KafkaConsumerConfiguration/commitInterval``, on every rebalance and on close:
/// a member that dies before storing has its records delivered again to another member.
///
/// Polls, commits and close block, so they run on the consumer's own thread, never on Swift's
/// cooperative pool.
///
/// - Important: run it in a `ServiceGroup` (or call ``run()``): on graceful shutdown it ends
///   ``messages``, commits, leaves the group and releases librdkafka. List it *before* the
///   services that iterate its messages: a group shuts down in reverse order, so their loops
///   (``messages`` ends when the iterating service is asked to stop) finish first, and the
///   consumer then commits what they stored.
public final class KafkaConsumer: Service, Sendable {
    private let client: RdKafkaClient
    private let thread: BlockingCallThread
    private let configuration: KafkaConsumerConfiguration
    private let logger: Logger
    private let lifecycle = Mutex(KafkaConsumerLifecycle())

    /// Creates a consumer and subscribes it to ``KafkaConsumerConfiguration/topics``.
    /// - Throws: ``KafkaError`` when librdkafka refuses a property or the subscription.
    public init(configuration: KafkaConsumerConfiguration, logger: Logger) throws {
        self.configuration = configuration
        self.logger = logger
        self.client = try RdKafkaClient.make(role: .consumer, properties: configuration.properties, logger: logger)
        client.context.revokeGraceMilliseconds.store(configuration.revokeGrace.wholeMilliseconds, ordering: .relaxed)
        self.thread = BlockingCallThread(name: "herald-kafka-consumer")
        do {
            try client.subscribe(topics: configuration.topics)
        } catch {
            thread.stop()
            throw error
        }
    }

    deinit {
        thread.stop()
    }

    /// The records of the subscribed topics, in order per partition. Iterate it from one task.
    /// It ends (returns `nil`) when the consumer shuts down.
    public var messages: KafkaConsumerMessages { KafkaConsumerMessages(consumer: self) }

    /// The partitions this member owns right now.
    public var assignment: [KafkaTopicPartition] {
        client.context.assignment.withLock { $0 }
    }

    /// The high watermark of each assigned partition as last seen in fetch responses (cheap: no
    /// broker round trip); with the offsets a consumer stored, it gives the lag.
    public func highWatermarks() -> [KafkaTopicPartition: Int64] {
        client.highWatermarks(assignment)
    }

    /// Marks `message` handled: after a commit, the group resumes after it.
    /// - Throws: ``KafkaError`` when the partition is no longer assigned to this member (its new
    ///   owner will deliver the record again) or the consumer is closed.
    public func storeOffset(for message: KafkaConsumerMessage) throws {
        try client.storeOffset(topic: message.topic, partition: message.partition, nextOffset: message.offset + 1)
    }

    /// Commits the stored offsets now and waits for the broker.
    public func commit() async throws {
        try await thread.run { [client] in try client.commitStoredOffsets() }
    }

    /// Stops fetching from `partitions` until ``resume(_:)``; records already fetched still arrive.
    public func pause(_ partitions: [KafkaTopicPartition]) throws {
        try client.setPaused(true, partitions: partitions)
    }

    /// Fetches again from paused partitions.
    public func resume(_ partitions: [KafkaTopicPartition]) throws {
        try client.setPaused(false, partitions: partitions)
    }

    /// How this client is doing (statistics, fatal error, last poll, assignment): cheap, no broker
    /// round trip.
    public var health: KafkaClientHealth { client.health }

    /// The values librdkafka holds for `properties`, read back from this consumer's handle (the
    /// configuration it really runs with); secret properties are never read back.
    public func configuredValues(_ properties: [String]) -> [String: String] {
        var values: [String: String] = [:]
        for property in properties where !KafkaClientConfiguration.isSensitive(property) {
            values[property] = client.configuredValue(property)
        }
        return values
    }

    /// Runs until graceful shutdown (or cancellation), then closes.
    public func run() async throws {
        try? await gracefulShutdown()
        try await close()
    }

    /// Ends ``messages``, commits stored offsets, leaves the group and releases librdkafka.
    /// Idempotent.
    public func close() async throws {
        guard case .close = lifecycle.withLock({ $0.close() }) else { return }
        // A revoke waiting for records in hand now (on the consumer thread) stops waiting, so the
        // close queued behind it runs.
        client.context.closing.store(true, ordering: .sequentiallyConsistent)
        defer {
            lifecycle.withLock { $0.closeFinished() }
            thread.stop()
        }
        try await thread.run { [client, logger] in
            defer { client.destroy() }
            do {
                try client.closeConsumer()
                logger.debug("Kafka consumer left its group")
            } catch {
                logger.warning("Kafka consumer did not close cleanly", metadata: ["error": "\(error)"])
                throw error
            }
        }
    }

    /// The records of one pull, for consumers that handle records in batches (one database
    /// transaction for all of them): up to `maximumBatchSize`, waiting up to the poll timeout for
    /// the first; empty when none came; nil once the consumer is closed or shutting down
    /// gracefully. Records of partitions revoked during the pull are left out (they come again
    /// to their new owner).
    public func nextMessages() async throws -> [KafkaConsumerMessage]? {
        if Task.isShuttingDownGracefully { return nil }
        guard let (messages, revocationsBefore) = try await nextBatch() else { return nil }
        return handOut(messages, fetchedAfter: revocationsBefore) ? messages : []
    }

    /// Hands `messages` out unless a revoke came since they were fetched: then their partitions
    /// belong to another member, and they come again to it.
    func handOut(_ messages: some Collection<KafkaConsumerMessage>, fetchedAfter revocationsBefore: Int) -> Bool {
        client.context.handOut(messages, fetchedAfter: revocationsBefore)
    }

    /// One pull: up to a batch of records, waiting up to the poll timeout for the first.
    /// - Returns: the records and the number of revocations seen before the poll.
    func nextBatch() async throws -> (messages: [KafkaConsumerMessage], revocationsBefore: Int)? {
        if !lifecycle.withLock(\.isOpen) { return nil }
        let maximum = configuration.maximumBatchSize
        let timeout = Int32(clamping: configuration.pollTimeout.wholeMilliseconds)
        do {
            return try await thread.run { [self] in
                if !lifecycle.withLock(\.isOpen) { return nil }
                let before = client.context.revocations.load(ordering: .sequentiallyConsistent)
                return (try client.pollBatch(maximum: maximum, timeoutMilliseconds: timeout), before)
            }
        } catch let error as KafkaError where error.kind == .shutDown {
            return nil
        }
    }

    /// What each revoke found in hand and left unstored (only with a revoke grace).
    var revokeWaits: [RevokeWait] { client.context.revokes.withLock { $0 } }

    /// Revocations seen so far (each one voids the records fetched before it).
    var revocations: Int {
        client.context.revocations.load(ordering: .sequentiallyConsistent)
    }
}

/// The records of a ``KafkaConsumer`` as an `AsyncSequence`, pulled on demand.
public struct KafkaConsumerMessages: AsyncSequence, Sendable {
    public typealias Element = KafkaConsumerMessage

    let consumer: KafkaConsumer

    public func makeAsyncIterator() -> Iterator {
        Iterator(consumer: consumer)
    }

    public struct Iterator: AsyncIteratorProtocol {
        let consumer: KafkaConsumer
        private var batch: [KafkaConsumerMessage] = []
        private var index = 0
        private var batchRevocations = 0

        init(consumer: KafkaConsumer) {
            self.consumer = consumer
        }

        public mutating func next() async throws -> KafkaConsumerMessage? {
            while true {
                if index < batch.count {
                    // A revoke since this batch was fetched gave its partitions away: its records
                    // will come again from the committed offset, to whoever owns them now.
                    if consumer.handOut(CollectionOfOne(batch[index]), fetchedAfter: batchRevocations) {
                        defer { index += 1 }
                        return batch[index]
                    }
                    batch = []
                    index = 0
                }
                try Task.checkCancellation()
                // Inside a ServiceGroup, the loop ends when its own service is asked to stop
                // (checked between pulls, not per record: at most one pull's records follow).
                // Records fetched but not handed out are not stored: they come again later.
                if Task.isShuttingDownGracefully { return nil }
                guard let (messages, revocationsBefore) = try await consumer.nextBatch() else { return nil }
                batch = messages
                index = 0
                batchRevocations = revocationsBefore
            }
        }
    }
}
