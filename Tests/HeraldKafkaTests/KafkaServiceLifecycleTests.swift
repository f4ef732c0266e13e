import Foundation
import HeraldCore
import HeraldMessaging
import Logging
import ServiceLifecycle
import Synchronization
import Testing

@testable import HeraldKafka

extension KafkaTests {
    /// Producer and consumer as services of a `ServiceGroup`, shut down gracefully.
    @Suite struct ServiceLifecycle {
        let logger = Logger(label: "test.kafka.lifecycle")

        /// Sends `count` records, then reads them back, with the topic's earlier `setup` record, and
        /// stores their offsets; returns once it has all of them. (Records spread over partitions,
        /// so `setup` may come after the others: returning before it left its offset uncommitted,
        /// and the group's next member was handed it — the flake this once was.)
        final class SendThenConsume: Service, Sendable {
            let producer: KafkaProducer
            let consumer: KafkaConsumer
            let topic: String
            let count: Int
            let consumed = Mutex<[String]>([])

            init(producer: KafkaProducer, consumer: KafkaConsumer, topic: String, count: Int) {
                self.producer = producer
                self.consumer = consumer
                self.topic = topic
                self.count = count
            }

            func run() async throws {
                try await producer.send(
                    (0..<count).map { KafkaProducerMessage(topic: topic, value: Array("first:\($0)".utf8)) })
                for try await message in consumer.messages {
                    let value = String(decoding: message.value, as: UTF8.self)
                    try consumer.storeOffset(for: message)
                    let done = consumed.withLock { consumed in
                        consumed.append(value)
                        return Set(consumed).count == count + 1
                    }
                    if done { return }
                }
            }
        }

        @Test("a group with a producer and a consumer shuts down gracefully: acknowledged, committed, left")
        func gracefulShutdownFlushesAndCommits() async throws {
            let settings = try await configurationFromEnvironment().kafka
            let topic = "herald.test.lifecycle.\(UUID().uuidString.prefix(8))"
            let group = "lifecycle-\(UUID())"

            let producer = try KafkaProducer(
                configuration: settings.producerConfiguration(clientID: "lifecycle"), logger: logger)
            // Create the topic before subscribing (the development broker creates it on first use).
            try await producer.send(KafkaProducerMessage(topic: topic, value: Array("setup".utf8)))
            let consumer = try KafkaConsumer(
                configuration: settings.consumerConfiguration(groupID: group, topics: [topic], clientID: "lifecycle"),
                logger: logger)
            let work = SendThenConsume(producer: producer, consumer: consumer, topic: topic, count: 200)

            let serviceGroup = ServiceGroup(
                configuration: .init(
                    services: [
                        .init(service: producer),
                        .init(service: consumer),
                        .init(service: work, successTerminationBehavior: .gracefullyShutdownGroup),
                    ],
                    logger: logger))
            // Returns only once every service has stopped: the work finished, the consumer
            // committed and left the group, the producer flushed.
            try await serviceGroup.run()

            // The setup record and the 200, each once (key-less records spread over partitions,
            // so only each partition's order holds).
            let consumed = work.consumed.withLock { $0 }
            #expect(consumed.count == 201)
            #expect(Set(consumed) == Set(["setup"] + (0..<200).map { "first:\($0)" }))

            // The producer refuses new records after its graceful shutdown.
            await #expect(throws: KafkaError.self) {
                try await producer.send(KafkaProducerMessage(topic: topic, value: Array("late".utf8)))
            }
            // The consumer's messages have ended.
            var iterator = consumer.messages.makeAsyncIterator()
            #expect(try await iterator.next() == nil)

            // A new member of the same group starts after what was committed on close: the next
            // record it sees is one produced now, not a redelivery.
            let producer2 = try KafkaProducer(
                configuration: settings.producerConfiguration(clientID: "lifecycle-2"), logger: logger)
            try await producer2.send(KafkaProducerMessage(topic: topic, value: Array("second:0".utf8)))
            await producer2.shutdown()
            let consumer2 = try KafkaConsumer(
                configuration: settings.consumerConfiguration(groupID: group, topics: [topic], clientID: "lifecycle-2"),
                logger: logger)
            var iterator2 = consumer2.messages.makeAsyncIterator()
            let next = try await iterator2.next()
            #expect(next.map { String(decoding: $0.value, as: UTF8.self) } == "second:0")
            try await consumer2.close()
        }

        /// The development broker's settings and a new topic `herald.test.<name>.<random>` holding
        /// one record (the broker creates a topic on first use).
        func topic(_ name: String, holding record: String) async throws -> (KafkaSettings, String) {
            let settings = try await configurationFromEnvironment().kafka
            let topic = "herald.test.\(name).\(UUID().uuidString.prefix(8))"
            let producer = try KafkaProducer(
                configuration: settings.producerConfiguration(clientID: name), logger: logger)
            try await producer.send(KafkaProducerMessage(topic: topic, value: Array(record.utf8)))
            await producer.shutdown()
            return (settings, topic)
        }

        /// librdkafka 2.0 can hang forever in `rd_kafka_consumer_close` when it serves an
        /// assignment itself (issues #4884, #4527); the consumer unsubscribes and serves the
        /// rebalance before closing. This checks that close path at each point of a group join:
        /// it ends, with nothing assigned. It did not reproduce the hang without the fix here
        /// (96 closes; `make test` met it once, under load), so it guards the path, not the race.
        /// The time limit turns a hang into a failure; it is not a measure of speed.
        @Test(
            "a consumer closed while its first assignment is on the way closes, and leaves the group",
            .timeLimit(.minutes(2)))
        func closeWhileTheAssignmentIsOnTheWay() async throws {
            let (settings, topic) = try await topic("close", holding: "setup")
            let group = "close-\(UUID())"
            // Closed at different points of the group join: before it, during it, after the
            // assignment is queued but not yet served.
            for wait in [0, 10, 30, 60, 100, 200, 400, 800] {
                let consumer = try KafkaConsumer(
                    configuration: settings.consumerConfiguration(groupID: group, topics: [topic], clientID: "close"),
                    logger: logger)
                try await Task.sleep(for: .milliseconds(wait))
                try await consumer.close()
                #expect(consumer.assignment.isEmpty, "closed after \(wait) ms with partitions assigned")
            }
        }

        @Test("a graceful shutdown triggered from outside ends a consumer loop that waits for records")
        func externalShutdownEndsAnIdleLoop() async throws {
            let (settings, topic) = try await topic("idle", holding: "only")

            let consumer = try KafkaConsumer(
                configuration: settings.consumerConfiguration(
                    groupID: "idle-\(UUID())", topics: [topic], clientID: "idle"),
                logger: logger)
            let received = Mutex(0)
            struct Loop: Service {
                let consumer: KafkaConsumer
                let received: @Sendable () -> Void
                func run() async throws {
                    for try await message in consumer.messages {
                        try consumer.storeOffset(for: message)
                        received()
                    }
                }
            }
            let serviceGroup = ServiceGroup(
                configuration: .init(
                    services: [
                        .init(service: consumer),
                        .init(service: Loop(consumer: consumer, received: { received.withLock { $0 += 1 } })),
                    ],
                    logger: logger))
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { try await serviceGroup.run() }
                let got = await eventually(timeout: .seconds(30)) { received.withLock { $0 } == 1 }
                #expect(got)
                await serviceGroup.triggerGracefulShutdown()
                try await tasks.waitForAll()
            }
            #expect(received.withLock { $0 } == 1)
            #expect(consumer.assignment.isEmpty, "the consumer gave its partitions back")
        }

        @Test("a record for a topic that is too large fails with a clear error, and the producer keeps working")
        func oversizedRecordFailsAlone() async throws {
            let settings = try await configurationFromEnvironment().kafka
            let topic = "herald.test.size.\(UUID().uuidString.prefix(8))"
            var configuration = settings.producerConfiguration(clientID: "size")
            configuration.client.extraProperties["message.max.bytes"] = "10000"
            let producer = try KafkaProducer(configuration: configuration, logger: logger)
            do {
                try await producer.send(KafkaProducerMessage(topic: topic, value: [UInt8](repeating: 1, count: 20_000)))
                Issue.record("an oversized record should fail")
            } catch let error as KafkaError {
                #expect(error.kind == .messageTooLarge)
                #expect(!error.isRetriable)
            }
            let report = try await producer.send(KafkaProducerMessage(topic: topic, value: Array("small".utf8)))
            #expect(report.offset >= 0)
            await producer.shutdown()
        }

        @Test("a property librdkafka does not know is refused with its name")
        func unknownPropertyIsRefused() throws {
            var configuration = KafkaProducerConfiguration(
                client: KafkaClientConfiguration(bootstrapServers: "127.0.0.1:1"))
            configuration.client.extraProperties["no.such.property"] = "1"
            do {
                _ = try KafkaProducer(configuration: configuration, logger: logger)
                Issue.record("creating the producer should fail")
            } catch let error as KafkaError {
                #expect(error.kind == .configuration)
                #expect(error.message.contains("no.such.property"))
            }
        }
    }
}
