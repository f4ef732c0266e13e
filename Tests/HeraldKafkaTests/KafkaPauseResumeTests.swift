import Foundation
import HeraldCore
import HeraldMessaging
import Logging
import Testing

@testable import HeraldKafka

extension KafkaTests {
    /// Pausing partitions stops their records; resuming delivers the rest, in order, none lost.
    @Suite struct PauseResume {
        let logger = Logger(label: "test.kafka.pause")

        /// Pulls until `count` records arrived (or `timeout` passed), through the consumer's own pull.
        func pull(_ consumer: KafkaConsumer, count: Int, timeout: Duration) async throws -> [String] {
            var values: [String] = []
            let deadline = ContinuousClock.now + timeout
            while values.count < count && ContinuousClock.now < deadline {
                guard let (messages, _) = try await consumer.nextBatch() else { break }
                values += messages.map { String(decoding: $0.value, as: UTF8.self) }
            }
            return values
        }

        @Test("paused partitions deliver nothing; after resume the rest arrives in order")
        func pauseThenResume() async throws {
            let settings = try await configurationFromEnvironment().kafka
            let topic = "herald.test.pause.\(UUID().uuidString.prefix(8))"
            let producer = try KafkaProducer(
                configuration: settings.producerConfiguration(clientID: "pause"), logger: logger)
            // One key: one partition, one order.
            func send(_ values: [String]) async throws {
                try await producer.send(
                    values.map { KafkaProducerMessage(topic: topic, key: Array("k".utf8), value: Array($0.utf8)) })
            }
            try await send(["a0"])
            let consumer = try KafkaConsumer(
                configuration: settings.consumerConfiguration(
                    groupID: "pause-\(UUID())", topics: [topic], clientID: "pause"),
                logger: logger)

            #expect(try await pull(consumer, count: 1, timeout: .seconds(60)) == ["a0"])
            try consumer.pause(consumer.assignment)
            try await send(["b0", "b1", "b2"])
            // Long enough for several fetches (10 ms each on the development broker).
            #expect(
                try await pull(consumer, count: 1, timeout: .seconds(2)).isEmpty, "a paused partition delivers nothing")

            try consumer.resume(consumer.assignment)
            #expect(try await pull(consumer, count: 3, timeout: .seconds(30)) == ["b0", "b1", "b2"])

            try await consumer.close()
            await producer.shutdown()
        }
    }
}
