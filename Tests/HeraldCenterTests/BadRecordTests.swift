import Foundation
import HeraldCore
import HeraldDomain
import HeraldMessaging
import HeraldRecords
import HeraldStore
import Synchronization
import Testing

@testable import HeraldCenter
@testable import HeraldKafka

@Suite("One bad record does not stop herald-center", .serialized)
struct BadRecordTests {
    /// Outcome records no sender would write, put on the real broker among good ones: each goes to
    /// `herald.deadletter` with its reason, and the center keeps counting.
    @Test func craftedOutcomesAreDeadLetteredAndTheCenterKeepsCounting() async throws {
        try await withCenterEnvironment { env in
            let ids = try await env.register(3)
            let jobs = try env.startJobReader()
            let center = try env.startCenter(env.settings(name: "center-bad-records"))
            let push = try await env.createPush(audience: .everyone)
            #expect(try await env.eventually { !jobs.read(push: push).isEmpty })
            let batch = try #require(jobs.read(push: push).first)

            func outcome(_ adjust: (inout Herald_V1_OutcomeBatch) -> Void) throws -> [UInt8] {
                var record = Herald_V1_OutcomeBatch()
                record.schemaVersion = 1
                record.batchID = batch.batchID
                record.pushID = batch.pushID
                record.appID = batch.appID
                record.acceptedDeviceIds = ids.map { UInt64($0) }
                adjust(&record)
                return try record.encodedRecord()
            }
            let good = try outcome { _ in }
            var futureVersion = Herald_V1_OutcomeBatch()
            futureVersion.schemaVersion = 99
            let crafted: [(value: [UInt8], reason: String)] = [
                (Array(good.prefix(good.count / 2)), "truncated"),
                // (encodedRecord() would stamp this build's version.)
                (try futureVersion.serializedBytes(), "schema version 99"),
                // A batch id whose sequence reads 0x80000000: once a trap that crashed every center.
                (try outcome { $0.batchID = batch.pushID + Data([0x80, 0, 0, 0]) }, "out of range"),
                (try outcome { $0.batchID = Data(repeating: 7, count: 16) + Data([0, 0, 0, 0]) }, "not its push id"),
                (try outcome { $0.acceptedDeviceIds = [UInt64.max] }, "device id 18446744073709551615 is out of range"),
            ]
            let deadLettersBefore = DeadLetterCount.value
            let producer = try KafkaProducer(
                configuration: env.configuration.kafka.producerConfiguration(clientID: "test-bad-records"),
                logger: env.logger)
            for (value, _) in crafted {
                try await producer.send(
                    KafkaProducerMessage(topic: env.outcomesTopic, key: Array(batch.pushID), value: value))
            }
            try await producer.send(
                KafkaProducerMessage(topic: env.outcomesTopic, key: Array(batch.pushID), value: good))

            // Push events no API would write, on the center's other topic.
            var shortID = Herald_V1_PushEvent()
            shortID.pushID = Data([1, 2, 3])
            let craftedEvents: [(value: [UInt8], reason: String)] = [
                ([0xFF, 0xFF, 0xFF], "not a valid record"),
                (try shortID.encodedRecord(), "the push id is 3 bytes"),
            ]
            for (value, _) in craftedEvents {
                try await producer.send(KafkaProducerMessage(topic: env.pushesTopic, key: nil, value: value))
            }

            // The good outcome behind them is counted: the consumer survived.
            #expect(try await env.eventually { try await env.state(of: push) == .completed })
            let counters = try #require(try await env.pushes.counters(pushID: push.id))
            #expect(counters.accepted == 3 && counters.isComplete)

            // Every crafted record is in the dead-letter topic, with its reason.
            let letters = try await Self.deadLetters(from: env.outcomesTopic, count: crafted.count, env: env)
            #expect(letters.count == crafted.count)
            for (value, reason) in crafted {
                let letter = letters.first { Array($0.originalValue) == value }
                #expect(letter?.reason.contains(reason) == true, "\(reason): \(letter?.reason ?? "no dead letter")")
                #expect(letter?.consumer == "herald-center")
            }
            let eventLetters = try await Self.deadLetters(from: env.pushesTopic, count: craftedEvents.count, env: env)
            for (value, reason) in craftedEvents {
                let letter = eventLetters.first { Array($0.originalValue) == value }
                #expect(letter?.reason.contains(reason) == true, "\(reason): \(letter?.reason ?? "no dead letter")")
            }
            // Counted for the alert (other tests of this process may add theirs).
            let counted = DeadLetterCount.value - deadLettersBefore
            #expect(counted >= crafted.count + craftedEvents.count, "\(counted) dead letters counted")
            #expect(
                KafkaClientHealth.prometheusText([]).contains(
                    "\n# TYPE herald_dead_letters_total counter\nherald_dead_letters_total "))
            // And the center still claims what is announced after them.
            let next = try await env.createPush(audience: .everyone)
            #expect(try await env.eventually { !jobs.read(push: next).isEmpty })
            await producer.shutdown()
            await center.stop()
            await jobs.stop()
        }
    }

    /// The dead letters of records from `topic`, read from `herald.deadletter` until `count`
    /// arrived or 30 s passed.
    static func deadLetters(from topic: String, count: Int, env: CenterEnvironment) async throws
        -> [Herald_V1_DeadLetter]
    {
        let consumer = try KafkaConsumer(
            configuration: env.configuration.kafka.consumerConfiguration(
                groupID: "dead-letter-reader-\(env.suffix)-\(UUID().uuidString.prefix(8))",
                topics: [HeraldTopic.deadLetter.name],
                clientID: "test-dead-letters"),
            logger: env.logger)
        // A record read again after a rebalance is dead-lettered again (at least once): count each
        // original record once.
        var letters: [String: Herald_V1_DeadLetter] = [:]
        let deadline = ContinuousClock.now + .seconds(30)
        while letters.count < count, ContinuousClock.now < deadline,
            let messages = try await consumer.nextBatch()?.messages
        {
            for letter in messages.compactMap({ try? Herald_V1_DeadLetter.decodeRecord($0.value) })
            where letter.originalTopic == topic {
                letters["\(letter.originalPartition)/\(letter.originalOffset)"] = letter
            }
        }
        try await consumer.close()
        return Array(letters.values)
    }
}
