import CRdKafka
import Logging

/// librdkafka's built-in mock cluster: a Kafka broker for development and tests, in memory.
///
/// It speaks the Kafka protocol over TCP, so Herald's real clients talk to it unchanged. Its
/// limits (it is not Kafka): data is kept in memory only and lost when it stops; each
/// partition keeps about the last 5 MiB (and at most 100,000 records), older records vanish;
/// topics must be created up front (``createTopic(_:partitions:)``; topics created
/// automatically get 4 partitions, and there is no CreateTopics API); a rebalance waits about
/// `session.timeout.ms` minus one second for members to rejoin; a fetch with no data is
/// answered after `fetch.wait.max.ms`.
///
/// - Important: call ``shutdown()`` before the process ends.
public final class KafkaDevelopmentCluster: @unchecked Sendable {
    private let client: RdKafkaClient
    private var cluster: OpaquePointer?

    /// Starts a cluster of `brokers` brokers listening on 127.0.0.1.
    /// - Throws: ``KafkaError`` when librdkafka cannot start it.
    public init(brokers: Int, logger: Logger) throws {
        // A handle the mock cluster uses for its bookkeeping and thread; it produces nothing.
        client = try RdKafkaClient.make(role: .producer, properties: ["client.id": "herald-kafka-dev"], logger: logger)
        guard let cluster = client.makeMockCluster(brokers: brokers) else {
            throw KafkaError(
                kind: .configuration, message: "librdkafka could not start a mock cluster of \(brokers) brokers")
        }
        self.cluster = cluster
    }

    deinit {
        shutdown()
    }

    /// The `bootstrap.servers` value clients use to reach the cluster.
    public var bootstrapServers: String {
        guard let cluster else { return "" }
        return String(cString: rd_kafka_mock_cluster_bootstraps(cluster))
    }

    /// Creates a topic with `partitions` partitions (replication factor 1).
    /// - Returns: false when the topic exists already: the cluster listens from the moment it
    ///   starts, so a client that reconnects at once (a broker restarted under running services)
    ///   can have it made first, with the mock's default of 4 partitions.
    @discardableResult
    public func createTopic(_ name: String, partitions: Int) throws -> Bool {
        guard let cluster else { throw KafkaError.shutDown }
        let code = rd_kafka_mock_topic_create(cluster, name, Int32(partitions), 1)
        if code == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS { return false }
        if code != RD_KAFKA_RESP_ERR_NO_ERROR {
            throw KafkaError(code: code, context: "could not create topic \(name)")
        }
        return true
    }

    /// Takes a broker down or brings it back (for failure tests).
    public func setBroker(_ id: Int32, up: Bool) {
        guard let cluster else { return }
        _ = up ? rd_kafka_mock_broker_set_up(cluster, id) : rd_kafka_mock_broker_set_down(cluster, id)
    }

    /// Stops the brokers and drops their data. Idempotent.
    public func shutdown() {
        if let cluster {
            rd_kafka_mock_cluster_destroy(cluster)
            self.cluster = nil
        }
        client.destroy()
    }
}
