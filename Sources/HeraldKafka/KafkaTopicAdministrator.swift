import HeraldTiming
import Logging

/// A topic as the brokers describe it.
public struct KafkaTopicDescription: Sendable, Equatable {
    public var name: String
    public var partitions: Int
    /// Replicas of the topic's first partition (its replication factor).
    public var replicas: Int
}

/// A topic to create.
public struct KafkaTopicSpecification: Sendable, Equatable {
    public var name: String
    public var partitions: Int
    public var replicationFactor: Int
    /// Topic-level configuration, for example `min.insync.replicas`.
    public var configuration: [String: String]

    public init(name: String, partitions: Int, replicationFactor: Int, configuration: [String: String] = [:]) {
        self.name = name
        self.partitions = partitions
        self.replicationFactor = replicationFactor
        self.configuration = configuration
    }
}

/// Lists and creates topics through librdkafka's metadata requests and Admin API.
///
/// - Important: call ``shutdown()`` when done; it releases the client and its thread.
public final class KafkaTopicAdministrator: Sendable {
    private let client: RdKafkaClient
    private let thread = BlockingCallThread(name: "herald-kafka-admin")

    /// Creates a client for the brokers of `configuration` (its security properties included).
    /// - Throws: ``KafkaError`` `.configuration` when librdkafka refuses a property.
    public init(configuration: KafkaClientConfiguration, logger: Logger) throws {
        client = try RdKafkaClient.make(
            role: .producer, properties: KafkaProducerConfiguration(client: configuration).properties, logger: logger)
    }

    /// Every topic the brokers have, by name.
    /// - Throws: ``KafkaError`` when no broker answered within `timeout`.
    public func describeTopics(timeout: Duration) async throws -> [String: KafkaTopicDescription] {
        let milliseconds = Int32(clamping: timeout.wholeMilliseconds)
        let topics = try await thread.run { [client] in try client.describeTopics(timeoutMilliseconds: milliseconds) }
        return Dictionary(topics.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// Creates `topics`; the answer per topic is nil (created) or the broker's error.
    /// - Throws: ``KafkaError`` when the request as a whole failed (no broker answered, or the
    ///   brokers do not offer CreateTopics).
    public func createTopics(_ topics: [KafkaTopicSpecification], timeout: Duration) async throws
        -> [String: KafkaError?]
    {
        let milliseconds = Int32(clamping: timeout.wholeMilliseconds)
        return try await thread.run { [client] in
            try client.createTopics(topics, timeoutMilliseconds: milliseconds)
        }
    }

    /// Releases the client; blocking for at most a few seconds, on the administrator's thread.
    public func shutdown() async {
        _ = try? await thread.run { [client] in client.destroy(timeoutSeconds: 5) }
        thread.stop()
    }
}
