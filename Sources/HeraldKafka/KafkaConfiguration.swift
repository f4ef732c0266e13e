import HeraldTiming

/// Settings shared by Herald's Kafka producers and consumers.
///
/// Every property becomes a librdkafka configuration property; ``extraProperties`` passes any
/// other librdkafka property through unchanged (they win over the typed fields).
public struct KafkaClientConfiguration: Sendable {
    /// Comma-separated `host:port` list of bootstrap brokers (`HERALD_KAFKA_BROKERS`).
    public var bootstrapServers: String
    /// The client id brokers see in their logs and quotas.
    public var clientID: String
    /// Further librdkafka properties, applied last.
    public var extraProperties: [String: String]
    /// How often librdkafka reports its statistics (``KafkaClientHealth``, probes, metrics);
    /// zero turns them off.
    public var statisticsInterval: Duration = .seconds(5)

    public init(bootstrapServers: String, clientID: String = "herald", extraProperties: [String: String] = [:]) {
        self.bootstrapServers = bootstrapServers
        self.clientID = clientID
        self.extraProperties = extraProperties
    }

    /// Whether a property's value is a secret, never to be printed: passwords, secrets, inline
    /// keys and JAAS or OAuth configurations.
    public static func isSensitive(_ property: String) -> Bool {
        let name = property.lowercased()
        return ["password", "secret", "jaas", "oauthbearer.config", "key.pem", "ssl_key", "keystore"]
            .contains { name.contains($0) }
    }

    var properties: [String: String] {
        [
            "bootstrap.servers": bootstrapServers,
            "client.id": clientID,
            // Fail over between addresses of a broker quickly; never leave a broker alone for long.
            "reconnect.backoff.ms": "50",
            "reconnect.backoff.max.ms": "1000",
            "statistics.interval.ms": String(statisticsInterval.wholeMilliseconds),
        ]
    }
}

/// How a ``KafkaProducer`` batches and acknowledges.
public struct KafkaProducerConfiguration: Sendable {
    public var client: KafkaClientConfiguration
    /// Idempotent production: retries inside librdkafka never duplicate or reorder a record.
    public var enableIdempotence: Bool = true
    /// How long librdkafka waits to fill a batch (`linger.ms`).
    public var linger: Duration = .milliseconds(5)
    /// Records librdkafka may hold before ``KafkaProducer/send(_:)`` waits (`queue.buffering.max.messages`).
    /// This is the producer's whole in-memory buffer: when it is full, senders wait.
    public var maximumQueuedMessages: Int = 100_000
    /// How long a record may take to be acknowledged, retries included (`message.timeout.ms`).
    public var deliveryTimeout: Duration = .seconds(120)
    /// `none`, `lz4`, `zstd`, `snappy` or `gzip` (`compression.codec`).
    public var compression: String = "none"
    /// How long a graceful shutdown waits for unacknowledged records.
    public var flushTimeout: Duration = .seconds(30)

    public init(client: KafkaClientConfiguration) {
        self.client = client
    }

    var properties: [String: String] {
        var properties = client.properties
        properties["enable.idempotence"] = enableIdempotence ? "true" : "false"
        properties["linger.ms"] = String(linger.wholeMilliseconds)
        properties["queue.buffering.max.messages"] = String(maximumQueuedMessages)
        properties["message.timeout.ms"] = String(deliveryTimeout.wholeMilliseconds)
        properties["compression.codec"] = compression
        properties["acks"] = "all"
        properties.merge(client.extraProperties) { _, extra in extra }
        return properties
    }
}

/// How a ``KafkaConsumer`` joins its group and fetches.
public struct KafkaConsumerConfiguration: Sendable {
    public var client: KafkaClientConfiguration
    /// The consumer group; members of one group share the topics' partitions.
    public var groupID: String
    /// The topics to subscribe to.
    public var topics: [String]
    /// A member silent this long is removed from the group (`session.timeout.ms`).
    public var sessionTimeout: Duration = .seconds(10)
    /// `heartbeat.interval.ms`; about a third of the session timeout or less.
    public var heartbeatInterval: Duration = .seconds(3)
    /// Longest time a broker holds a fetch waiting for data (`fetch.wait.max.ms`).
    public var fetchWaitMaximum: Duration = .milliseconds(100)
    /// How often stored offsets are committed (`auto.commit.interval.ms`).
    public var commitInterval: Duration = .seconds(1)
    /// Where a group without committed offsets starts: `earliest` or `latest`.
    public var autoOffsetReset: String = "earliest"
    /// Records handed from librdkafka to Swift per poll. The only buffer on the Swift side.
    public var maximumBatchSize: Int = 256
    /// The most librdkafka fetches ahead of the records handed out, in KiB
    /// (`queued.max.messages.kbytes`; librdkafka's default is 65,536): a consumer behind a long
    /// backlog holds this much of it in memory.
    public var fetchQueueKilobytes: Int = 16_384
    /// How long one poll blocks its thread when no record is there.
    public var pollTimeout: Duration = .milliseconds(100)
    /// How long a revoke waits for the records of its partitions already handed out to be stored
    /// before it commits and gives them away (the group's rebalance waits meanwhile). Zero: it
    /// does not wait, and a record still being handled comes again to the next owner, which
    /// handles it a second time. Keep it well below `max.poll.interval.ms` (300 s).
    public var revokeGrace: Duration = .zero

    public init(client: KafkaClientConfiguration, groupID: String, topics: [String]) {
        self.client = client
        self.groupID = groupID
        self.topics = topics
    }

    var properties: [String: String] {
        var properties = client.properties
        properties["group.id"] = groupID
        properties["session.timeout.ms"] = String(sessionTimeout.wholeMilliseconds)
        properties["heartbeat.interval.ms"] = String(heartbeatInterval.wholeMilliseconds)
        properties["fetch.wait.max.ms"] = String(fetchWaitMaximum.wholeMilliseconds)
        properties["auto.commit.interval.ms"] = String(commitInterval.wholeMilliseconds)
        properties["auto.offset.reset"] = autoOffsetReset
        properties["queued.max.messages.kbytes"] = String(fetchQueueKilobytes)
        // At-least-once: an offset is stored only when the caller says its record is handled;
        // stored offsets are committed in the background and on every revoke and close.
        properties["enable.auto.commit"] = "true"
        properties["enable.auto.offset.store"] = "false"
        // Eager rebalancing: a revoke takes every partition back, so records fetched but not
        // handled can be dropped and fetched again from the committed offset.
        properties["partition.assignment.strategy"] = "range,roundrobin"
        properties.merge(client.extraProperties) { _, extra in extra }
        return properties
    }
}
