import Foundation

/// What librdkafka reports about one client every `statistics.interval.ms` (its statistics
/// JSON, the fields Herald uses): queue depth, each broker's connection state and round-trip
/// time, and for a consumer each assigned partition's lag.
public struct KafkaStatistics: Sendable {
    /// When the report arrived (monotonic).
    public var receivedAt: ContinuousClock.Instant
    /// Records and requests waiting in librdkafka's producer queues (`msg_cnt`).
    public var queuedMessages: Int
    /// The brokers of the cluster (bootstrap entries left out).
    public var brokers: [Broker]
    /// Lag of each partition this client consumes, in records, where librdkafka knows it.
    public var consumerLag: [KafkaTopicPartition: Int64]
    /// Seconds since each topic's metadata was last refreshed.
    public var topicMetadataAge: [String: Double]

    public struct Broker: Sendable {
        /// `host:port/id`.
        public var name: String
        public var nodeID: Int32
        /// librdkafka's connection state: `UP`, `DOWN`, `CONNECT`, `TRY_CONNECT`, `AUTH`, …
        public var state: String
        /// Average round-trip time of requests in the last interval, seconds (nil without requests).
        public var averageRoundTrip: Double?
        /// Requests sent and waiting for an answer.
        public var awaitingResponse: Int

        public var isUp: Bool { state == "UP" }
    }

    /// Parses librdkafka's statistics JSON; nil if it is not that.
    init?(json: UnsafeRawBufferPointer, receivedAt: ContinuousClock.Instant = .now) {
        guard let report = try? JSONDecoder().decode(Report.self, from: Data(json)) else { return nil }
        self.receivedAt = receivedAt
        self.queuedMessages = report.queuedMessages ?? 0
        // librdkafka may list one broker twice (as configured and as learned from metadata): one
        // entry per node, the connected one if either is.
        var byNode: [Int32: Broker] = [:]
        for entry in (report.brokers ?? [:]).values where entry.nodeid >= 0 {
            let broker = Broker(
                name: entry.name, nodeID: entry.nodeid, state: entry.state,
                averageRoundTrip: (entry.rtt?.cnt ?? 0) > 0 ? Double(entry.rtt?.avg ?? 0) / 1_000_000 : nil,
                awaitingResponse: entry.awaitingResponse ?? 0)
            if byNode[entry.nodeid]?.isUp != true { byNode[entry.nodeid] = broker }
        }
        self.brokers = byNode.values.sorted { $0.nodeID < $1.nodeID }
        var lag: [KafkaTopicPartition: Int64] = [:]
        var metadataAge: [String: Double] = [:]
        for (name, topic) in report.topics ?? [:] {
            if let age = topic.metadataAge { metadataAge[name] = Double(age) / 1000 }
            for partition in (topic.partitions ?? [:]).values where partition.partition >= 0 {
                if let consumerLag = partition.consumerLag, consumerLag >= 0 {
                    lag[KafkaTopicPartition(topic: name, partition: partition.partition)] = consumerLag
                }
            }
        }
        self.consumerLag = lag
        self.topicMetadataAge = metadataAge
    }

    /// The subset of librdkafka's statistics JSON that Herald reads (its field names).
    private struct Report: Decodable {
        var queuedMessages: Int?
        var brokers: [String: BrokerReport]?
        var topics: [String: TopicReport]?

        enum CodingKeys: String, CodingKey {
            case queuedMessages = "msg_cnt"
            case brokers, topics
        }
    }

    private struct BrokerReport: Decodable {
        var name: String
        var nodeid: Int32
        var state: String
        var awaitingResponse: Int?
        var rtt: Window?

        enum CodingKeys: String, CodingKey {
            case name, nodeid, state, rtt
            case awaitingResponse = "waitresp_cnt"
        }
    }

    private struct Window: Decodable {
        var avg: Int64?
        var cnt: Int64?
    }

    private struct TopicReport: Decodable {
        var metadataAge: Int64?
        var partitions: [String: PartitionReport]?

        enum CodingKeys: String, CodingKey {
            case metadataAge = "metadata_age"
            case partitions
        }
    }

    private struct PartitionReport: Decodable {
        var partition: Int32
        var consumerLag: Int64?

        enum CodingKeys: String, CodingKey {
            case partition
            case consumerLag = "consumer_lag"
        }
    }
}

/// How a Kafka client is doing, for readiness and liveness probes and metrics.
public struct KafkaClientHealth: Sendable {
    /// The last statistics report, if one arrived.
    public var statistics: KafkaStatistics?
    /// librdkafka's fatal error (the client cannot go on and must be recreated), if one happened.
    public var fatalError: String?
    /// For a consumer: when its thread last returned from a poll (monotonic); nil before the first.
    public var lastPoll: ContinuousClock.Instant?
    /// For a consumer: the partitions it owns now.
    public var assignment: [KafkaTopicPartition]
}
