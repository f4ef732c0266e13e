import Foundation
import HeraldCore
import HeraldMessaging
import HeraldRecords
import Logging
import Testing

@testable import HeraldKafka

extension KafkaTests {
    /// `herald kafka dead-letters`: a letter written as a consumer writes it is found by its
    /// reason, and replaying it puts the original key and value back on the original topic.
    @Suite struct DeadLetters {
        let logger = Logger(label: "test.kafka.dead-letters")

        @Test("a dead letter is read back with where it came from, and its replay reaches the original topic")
        func readAndReplay() async throws {
            let settings = try await configurationFromEnvironment().kafka
            let marker = "replay-test-\(UUID().uuidString.prefix(8))"
            let topic = "herald.test.\(marker)"
            let producer = try KafkaProducer(
                configuration: settings.producerConfiguration(clientID: "dead-letters"), logger: logger)
            // The original topic exists (records it held before the refused one).
            try await producer.send(
                KafkaProducerMessage(topic: topic, key: Array("k0".utf8), value: Array("before".utf8)))
            let refused = KafkaConsumerMessage(
                topic: topic, partition: 0, offset: 41, key: Array("push-7".utf8), value: [0xFF, 0x00, 0x42])
            try await producer.sendToDeadLetter(
                refused, reason: "unreadable record (\(marker))", consumer: "herald-test")

            let entries = try await DeadLetterArchive.read(settings: settings, idle: .seconds(2), logger: logger)
            let chosen = entries.filter(DeadLetterFilter(reasonContains: marker.uppercased()).matches)
            try #require(chosen.count == 1)
            let letter = try #require(chosen[0].letter)
            #expect(letter.originalTopic == topic)
            #expect(letter.originalOffset == 41)
            #expect(Array(letter.originalKey) == Array("push-7".utf8))
            #expect(Array(letter.originalValue) == [0xFF, 0x00, 0x42])
            #expect(letter.consumer == "herald-test")
            // Filters narrow by consumer and offset; other letters of the topic are not chosen.
            #expect(!DeadLetterFilter(reasonContains: marker, consumer: "herald-center").matches(chosen[0]))
            #expect(!DeadLetterFilter(reasonContains: marker, fromOffset: chosen[0].offset + 1).matches(chosen[0]))
            #expect(DeadLetterFilter(reasonContains: marker, toOffset: chosen[0].offset).matches(chosen[0]))

            #expect(try await DeadLetterArchive.replay(chosen, producer: producer) == 1)
            await producer.shutdown()

            let consumer = try KafkaConsumer(
                configuration: settings.consumerConfiguration(
                    groupID: "replay-check-\(marker)", topics: [topic], clientID: "replay-check"),
                logger: logger)
            var received: [KafkaConsumerMessage] = []
            let started = ContinuousClock.now
            while received.count < 2, ContinuousClock.now - started < .seconds(30),
                let batch = try await consumer.nextMessages()
            {
                received += batch
            }
            try await consumer.close()
            #expect(received.map(\.value) == [Array("before".utf8), [0xFF, 0x00, 0x42]])
            #expect(received.last?.key == Array("push-7".utf8))
        }
    }
}
