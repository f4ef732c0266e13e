import HeraldCore
import HeraldKafka

/// Creates the topics that are missing and reports on every one: what `herald kafka
/// create-topics` (and the deploy's topic Job) does.
public struct KafkaTopicProvisioner: Sendable {
    /// What happened to one topic.
    public struct Report: Sendable, Equatable {
        public enum State: String, Sendable {
            /// It was there already (left as it is).
            case exists
            /// This run created it.
            case created
            /// It is missing and could not be created.
            case failed
        }

        public var topic: String
        public var state: State
        public var partitions: Int?
        public var replicas: Int?
        /// Why it could not be created, and what to do.
        public var error: String?
        /// An existing topic that differs from the settings.
        public var warnings: [String] = []
    }

    /// Herald's topics (every `HeraldTopic`) as the settings describe them.
    public static func heraldTopics(_ settings: KafkaTopicSettings) -> [KafkaTopicSpecification] {
        HeraldTopic.allCases.map { topic in
            KafkaTopicSpecification(
                name: topic.name, partitions: settings.partitions[topic] ?? topic.defaultPartitions,
                replicationFactor: settings.replicationFactor,
                configuration: ["min.insync.replicas": String(settings.minimumInSyncReplicas)])
        }
    }

    let administrator: KafkaTopicAdministrator
    let timeout: Duration

    public init(administrator: KafkaTopicAdministrator, timeout: Duration) {
        self.administrator = administrator
        self.timeout = timeout
    }

    /// Lists the brokers' topics, creates those of `wanted` that are missing, and reports on each.
    /// - Throws: ``KafkaError`` when the brokers did not list their topics.
    public func provision(_ wanted: [KafkaTopicSpecification]) async throws -> [Report] {
        let existing = try await administrator.describeTopics(timeout: timeout)
        let missing = wanted.filter { existing[$0.name] == nil }
        var answers: [String: KafkaError?] = [:]
        var requestError: KafkaError?
        if !missing.isEmpty {
            do {
                answers = try await administrator.createTopics(missing, timeout: timeout)
            } catch let error as KafkaError {
                requestError = error
            }
        }
        return wanted.map { specification in
            if let description = existing[specification.name] {
                return Self.existing(description, wanted: specification)
            }
            switch answers[specification.name] {
            case .some(.none):
                return Report(
                    topic: specification.name, state: .created, partitions: specification.partitions,
                    replicas: specification.replicationFactor)
            case .some(.some(let error)) where error.name == "TOPIC_ALREADY_EXISTS":
                // Created meanwhile by another run (two deploys at once).
                return Report(topic: specification.name, state: .exists)
            case .some(.some(let error)):
                return Report(topic: specification.name, state: .failed, error: Self.explain(error))
            case .none:
                return Report(
                    topic: specification.name, state: .failed,
                    error: requestError.map(Self.explain) ?? "the brokers did not answer for this topic")
            }
        }
    }

    private static func existing(_ description: KafkaTopicDescription, wanted: KafkaTopicSpecification) -> Report {
        var report = Report(
            topic: description.name, state: .exists, partitions: description.partitions,
            replicas: description.replicas)
        if description.partitions < wanted.partitions {
            report.warnings.append(
                "has \(description.partitions) partitions, the settings ask \(wanted.partitions): left as it is (docs/operations.md, \"Adding partitions\")"
            )
        }
        if description.replicas < wanted.replicationFactor {
            report.warnings.append(
                "has \(description.replicas) replicas, the settings ask \(wanted.replicationFactor): losing a broker can lose records"
            )
        }
        return report
    }

    /// The broker's error, with what to do about the usual ones.
    static func explain(_ error: KafkaError) -> String {
        switch error.name {
        case "_UNSUPPORTED_FEATURE", "UNSUPPORTED_VERSION":
            return
                "\(error.message) — these brokers do not offer the CreateTopics API: create the topic with the cluster's own tools"
        case "_TIMED_OUT" where error.message.contains("controller"):
            return
                "\(error.message) — no broker named itself the cluster's controller, which CreateTopics needs (the development broker never does: it creates Herald's topics itself); on a real cluster check that the brokers are up, or create the topic with the cluster's own tools"
        case "POLICY_VIOLATION", "INVALID_REPLICATION_FACTOR", "INVALID_PARTITIONS", "INVALID_CONFIG":
            return "\(error.message) — change HERALD_KAFKA_TOPICS_* (docs/configuration.md)"
        case "TOPIC_AUTHORIZATION_FAILED", "CLUSTER_AUTHORIZATION_FAILED":
            return "\(error.message) — the Kafka user needs the CREATE permission on the cluster or on these topics"
        default:
            return error.description
        }
    }
}
