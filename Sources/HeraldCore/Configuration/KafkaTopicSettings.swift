import Configuration

/// How `herald kafka create-topics` creates Herald's topics on a real cluster.
public struct KafkaTopicSettings: Sendable, Equatable {
    /// Partitions per topic (`HERALD_KAFKA_TOPICS_PARTITIONS_PUSHES`, `_JOBS`,
    /// `_TRANSACTIONAL_JOBS`, `_OUTCOMES`, `_DEADLETTER`). `herald.jobs` bounds how many senders do work at once.
    public var partitions: [HeraldTopic: Int]
    /// Copies of every partition (`HERALD_KAFKA_TOPICS_REPLICATION_FACTOR`, default 3).
    public var replicationFactor: Int
    /// Replicas that must have a record before `acks=all` producers are answered
    /// (`HERALD_KAFKA_TOPICS_MIN_INSYNC_REPLICAS`, default 2; at most the replication factor).
    public var minimumInSyncReplicas: Int

    public init(reader config: ConfigReader) throws(SettingError) {
        var partitions: [HeraldTopic: Int] = [:]
        for topic in HeraldTopic.allCases {
            let key = "kafka.topics.partitions.\(topic.settingName)"
            let value = config.int(forKey: ConfigKey(key), default: topic.defaultPartitions)
            guard value >= 1 else {
                throw SettingError(
                    "HERALD_KAFKA_TOPICS_PARTITIONS_\(topic.environmentName) must be at least 1 (it is \(value))"
                )
            }
            partitions[topic] = value
        }
        self.partitions = partitions
        replicationFactor = config.int(forKey: "kafka.topics.replicationFactor", default: 3)
        minimumInSyncReplicas = config.int(forKey: "kafka.topics.minInsyncReplicas", default: 2)
        guard replicationFactor >= 1 else {
            throw SettingError("HERALD_KAFKA_TOPICS_REPLICATION_FACTOR must be at least 1 (it is \(replicationFactor))")
        }
        guard (1...replicationFactor).contains(minimumInSyncReplicas) else {
            throw SettingError(
                "HERALD_KAFKA_TOPICS_MIN_INSYNC_REPLICAS must be between 1 and the replication factor \(replicationFactor) (it is \(minimumInSyncReplicas))"
            )
        }
    }
}

extension HeraldTopic {
    /// The topic's word in setting keys: `pushes`, `jobs`, `transactionalJobs`, `outcomes`,
    /// `deadletter`.
    public var settingName: String {
        switch self {
        case .pushes: "pushes"
        case .jobs: "jobs"
        case .transactionalJobs: "transactionalJobs"
        case .outcomes: "outcomes"
        case .deadLetter: "deadletter"
        }
    }

    /// The same word in environment variable names: `PUSHES`, `JOBS`, `TRANSACTIONAL_JOBS`, ….
    public var environmentName: String {
        settingName.reduce(into: "") { name, character in
            if character.isUppercase { name.append("_") }
            name.append(contentsOf: character.uppercased())
        }
    }
}
