import Foundation
import HeraldCore
import HeraldMessaging
import HeraldRecords
import Logging
import Testing

@testable import HeraldKafka

extension KafkaTests {
    /// `herald kafka create-topics`' two calls against the development broker: listing topics
    /// with their partitions and replicas, and CreateTopics.
    @Suite struct TopicAdministration {
        let logger = Logger(label: "test.kafka.topics")

        func administrator() async throws -> KafkaTopicAdministrator {
            let settings = try await HeraldConfiguration.load().kafka
            return try KafkaTopicAdministrator(
                configuration: settings.producerConfiguration(clientID: "topics").client, logger: logger)
        }

        @Test("lists Herald's topics with the partitions the development broker made, and nothing it was not asked for")
        func describesTopics() async throws {
            let administrator = try await administrator()
            let topics = try await administrator.describeTopics(timeout: .seconds(10))
            await administrator.shutdown()
            let development = DevelopmentBrokerSettings(reader: try await HeraldConfiguration.makeReader())
            for topic in HeraldTopic.allCases {
                let description = try #require(topics[topic.name], "\(topic.name) not listed")
                #expect(description.partitions == development.partitions[topic])
                #expect(description.replicas == 1)
            }
            // Listing asks for all topics and must not auto-create the one it looks for.
            #expect(topics["herald.test.never-created"] == nil)
        }

        @Test(
            "provisioning: existing topics are reported with their differences; a missing one the broker cannot create fails with what to do"
        )
        func provisions() async throws {
            let administrator = try await administrator()
            let environment = [
                "HERALD_KAFKA_TOPICS_PARTITIONS_JOBS": "64", "HERALD_KAFKA_TOPICS_REPLICATION_FACTOR": "1",
                "HERALD_KAFKA_TOPICS_MIN_INSYNC_REPLICAS": "1",
            ]
            let settings = try KafkaTopicSettings(
                reader: try await HeraldConfiguration.makeReader(
                    environment: ProcessInfo.processInfo.environment.merging(environment) { $1 }))
            let missing = "herald.test.created.\(UUID().uuidString.prefix(8))"
            let wanted =
                KafkaTopicProvisioner.heraldTopics(settings)
                + [KafkaTopicSpecification(name: missing, partitions: 3, replicationFactor: 1)]
            let reports = try await KafkaTopicProvisioner(administrator: administrator, timeout: .seconds(3))
                .provision(wanted)
            let listed = try await administrator.describeTopics(timeout: .seconds(10))
            await administrator.shutdown()

            #expect(reports.map(\.topic) == wanted.map(\.name))
            let jobs = try #require(reports.first { $0.topic == HeraldTopic.jobs.name })
            #expect(jobs.state == .exists)
            #expect(jobs.warnings.count == 1)
            #expect(jobs.warnings.first?.contains("the settings ask 64") == true)
            let pushes = try #require(reports.first { $0.topic == HeraldTopic.pushes.name })
            #expect(pushes.state == .exists && pushes.warnings.isEmpty)
            // librdkafka 2.0's mock cluster names no controller, so CreateTopics cannot be sent
            // to it: the report says so and what to do, and nothing was created.
            let created = try #require(reports.last)
            #expect(created.state == .failed)
            #expect(created.error?.contains("controller") == true)
            #expect(created.error?.contains("create the topic with the cluster's own tools") == true)
            #expect(listed[missing] == nil)
        }

        @Test("topic settings: defaults, and values that cannot work are refused with the variable's name")
        func settings() async throws {
            let defaults = try KafkaTopicSettings(reader: try await HeraldConfiguration.makeReader(environment: [:]))
            #expect(defaults.replicationFactor == 3 && defaults.minimumInSyncReplicas == 2)
            #expect(defaults.partitions[.jobs] == HeraldTopic.jobs.defaultPartitions)
            for (name, value, mention) in [
                ("HERALD_KAFKA_TOPICS_PARTITIONS_DEADLETTER", "0", "HERALD_KAFKA_TOPICS_PARTITIONS_DEADLETTER"),
                ("HERALD_KAFKA_TOPICS_MIN_INSYNC_REPLICAS", "4", "HERALD_KAFKA_TOPICS_MIN_INSYNC_REPLICAS"),
                ("HERALD_KAFKA_TOPICS_REPLICATION_FACTOR", "0", "HERALD_KAFKA_TOPICS_REPLICATION_FACTOR"),
            ] {
                let reader = try await HeraldConfiguration.makeReader(environment: [name: value])
                let error = #expect(throws: SettingError.self) { try KafkaTopicSettings(reader: reader) }
                #expect(error?.description.contains(mention) == true)
            }
        }
    }
}
