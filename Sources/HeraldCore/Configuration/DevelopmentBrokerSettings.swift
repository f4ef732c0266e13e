import Configuration
import Foundation

/// Settings of `herald-kafka-dev`, the development broker.
public struct DevelopmentBrokerSettings: Sendable {
    /// Brokers in the mock cluster (`HERALD_KAFKA_DEV_BROKERS`).
    public var brokers: Int
    /// First listening port on 127.0.0.1; broker n listens on port + n − 1; 0 lets the kernel
    /// choose (`HERALD_KAFKA_DEV_PORT`).
    public var port: Int
    /// A file the bootstrap address is written to once the brokers listen (`HERALD_KAFKA_DEV_BOOTSTRAP_FILE`).
    public var bootstrapFile: String?
    /// Partitions per Herald topic (`HERALD_KAFKA_DEV_PARTITIONS_PUSHES`, `_JOBS`,
    /// `_TRANSACTIONAL_JOBS`, `_OUTCOMES`, `_DEADLETTER`).
    public var partitions: [HeraldTopic: Int]
    /// More topics to create, as `name:partitions` separated by commas (`HERALD_KAFKA_DEV_TOPICS`).
    public var extraTopics: [(name: String, partitions: Int)]

    public init(reader config: ConfigReader) {
        brokers = config.int(forKey: "kafka.dev.brokers", default: 1)
        port = config.int(forKey: "kafka.dev.port", default: 9092)
        bootstrapFile = config.string(forKey: "kafka.dev.bootstrapFile")
        partitions = [
            .pushes: config.int(forKey: "kafka.dev.partitions.pushes", default: HeraldTopic.pushes.defaultPartitions),
            .jobs: config.int(forKey: "kafka.dev.partitions.jobs", default: HeraldTopic.jobs.defaultPartitions),
            .transactionalJobs: config.int(
                forKey: "kafka.dev.partitions.transactionalJobs",
                default: HeraldTopic.transactionalJobs.defaultPartitions),
            .outcomes: config.int(
                forKey: "kafka.dev.partitions.outcomes", default: HeraldTopic.outcomes.defaultPartitions),
            .deadLetter: config.int(
                forKey: "kafka.dev.partitions.deadletter", default: HeraldTopic.deadLetter.defaultPartitions),
        ]
        extraTopics = Self.parseTopics(config.string(forKey: "kafka.dev.topics", default: ""))
    }

    /// Parses `name:partitions,name:partitions`; a name without a count gets 4 partitions.
    static func parseTopics(_ text: String) -> [(name: String, partitions: Int)] {
        text.split(separator: ",").compactMap { entry in
            let parts = entry.split(separator: ":")
            guard let name = parts.first?.trimmingCharacters(in: .whitespaces), !name.isEmpty else { return nil }
            let partitions = parts.count > 1 ? Int(parts[1].trimmingCharacters(in: .whitespaces)) ?? 4 : 4
            return (name, max(1, partitions))
        }
    }
}
