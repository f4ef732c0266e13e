import Foundation
import HeraldCore
import HeraldMessaging
import Logging
import Synchronization
import Testing

@testable import HeraldKafka

extension KafkaTests {
    /// A member that loses partitions while it still holds records of them (a sender's batches in
    /// flight when another sender joins) finishes them before the new owner starts.
    @Suite struct RevokeGrace {
        let logger = Logger(label: "test.kafka.revoke")

        /// Records one member handled, in order.
        final class Handled: Sendable {
            let values = Mutex<[String]>([])
            /// Per partition, the offset after the highest one stored.
            let stored = Mutex<[KafkaTopicPartition: Int64]>([:])
            var count: Int { values.withLock { $0.count } }
            var set: Set<String> { values.withLock { Set($0) } }
        }

        /// Hands each record to a task of its own that holds it `hold` (a batch's round trip to
        /// APNs) before noting it handled and storing its offset, as herald-sender does: many
        /// records in hand at any moment.
        static func consume(_ consumer: KafkaConsumer, hold: Duration, into handled: Handled) async throws {
            try await withThrowingDiscardingTaskGroup { group in
                for try await message in consumer.messages {
                    group.addTask {
                        if hold > .zero { try? await Task.sleep(for: hold) }
                        handled.values.withLock { $0.append(String(decoding: message.value, as: UTF8.self)) }
                        let partition = KafkaTopicPartition(topic: message.topic, partition: message.partition)
                        // Never move a partition's stored offset backwards. A store refused
                        // (the partition given away after the grace) is the next owner's record.
                        handled.stored.withLock { stored in
                            guard message.offset + 1 > stored[partition] ?? 0 else { return }
                            if (try? consumer.storeOffset(for: message)) != nil {
                                stored[partition] = message.offset + 1
                            }
                        }
                    }
                }
            }
        }

        @Test("the ledger: handed out less stored, per partition; a store covers every record before it")
        func ledger() {
            let p0 = KafkaTopicPartition(topic: "t", partition: 0)
            let p1 = KafkaTopicPartition(topic: "t", partition: 1)
            var ledger = HandOutLedger()
            #expect(ledger.unstored(in: [p0, p1]) == 0)
            // A partition picked up at offset 40: nothing before it is this member's.
            for offset in Int64(40)..<45 { ledger.handOut(p0, offset: offset) }
            ledger.handOut(p1, offset: 7)
            #expect(ledger.unstored(in: [p0]) == 5)
            #expect(ledger.unstored(in: [p0, p1]) == 6)
            ledger.store(p0, nextOffset: 43)
            #expect(ledger.unstored(in: [p0]) == 2)
            // A store never moves back.
            ledger.store(p0, nextOffset: 41)
            #expect(ledger.unstored(in: [p0]) == 2)
            ledger.store(p0, nextOffset: 45)
            #expect(ledger.unstored(in: [p0]) == 0)
            ledger.forget([p1])
            #expect(ledger.unstored(in: [p0, p1]) == 0)
            // Given back later at another offset: counted afresh.
            ledger.handOut(p1, offset: 90)
            #expect(ledger.unstored(in: [p1]) == 1)
        }

        /// The development broker refuses offset commits while its group rebalances (see
        /// ConsumerGroup's kill test), so on it both members may see some records again whatever
        /// A does; what the test checks is A's side: at the revoke its join caused, A held
        /// records, and it gave its partitions back only once every one of them was stored.
        /// Without the grace (zero) the revoke finds records in hand and leaves them unstored.
        @Test(
            "a second member joins while the first holds records: the first stores them all before giving its partitions back"
        )
        func joinWhileRecordsAreInHand() async throws {
            let settings = try await configurationFromEnvironment().kafka
            let topic = "herald.test.revoke.\(UUID().uuidString.prefix(8))"
            let group = "revoke-\(UUID())"
            let producer = try KafkaProducer(
                configuration: settings.producerConfiguration(clientID: "revoke"), logger: logger)
            func send(_ value: String) async throws {
                try await producer.send(
                    KafkaProducerMessage(topic: topic, key: Array(UUID().uuidString.utf8), value: Array(value.utf8)))
            }
            // The topic exists before anyone subscribes.
            try await send("r0")

            var first = settings.consumerConfiguration(groupID: group, topics: [topic], clientID: "revoke-a")
            first.revokeGrace = .seconds(30)
            let a = try KafkaConsumer(configuration: first, logger: logger)
            let handledA = Handled()
            let consumingA = Task { try await Self.consume(a, hold: .milliseconds(200), into: handledA) }

            // A steady stream while the group changes: about 100 records a second, some 20 of
            // them in A's hands at any moment.
            let stop = Atomic<Bool>(false)
            let producing = Task {
                var sent = 0
                while !stop.load(ordering: .relaxed) {
                    sent += 1
                    try await send("r\(sent)")
                    try await Task.sleep(for: .milliseconds(10))
                }
                return sent + 1
            }
            #expect(await eventually(timeout: .seconds(60)) { handledA.count >= 100 }, "A owns the topic")
            #expect(a.revokeWaits.isEmpty)

            let b = try KafkaConsumer(
                configuration: settings.consumerConfiguration(groupID: group, topics: [topic], clientID: "revoke-b"),
                logger: logger)
            let handledB = Handled()
            let consumingB = Task { try await Self.consume(b, hold: .zero, into: handledB) }
            #expect(
                await eventually(timeout: .seconds(60)) { handledB.count >= 100 },
                "B gets partitions in the rebalance its join starts")

            stop.store(true, ordering: .relaxed)
            let produced = try await producing.value
            let expected = Set((0..<produced).map { "r\($0)" })
            #expect(
                await eventually(timeout: .seconds(60)) { handledA.set.union(handledB.set) == expected },
                "every record handled, none lost")
            let revokes = a.revokeWaits
            try await a.close()
            try await b.close()
            _ = try? await consumingA.value
            _ = try? await consumingB.value
            await producer.shutdown()

            let joined = try #require(revokes.first, "B's join took A's partitions away")
            #expect(joined.inHand > 0, "A held records when its partitions were revoked")
            #expect(joined.leftUnstored == 0, "A stored every record it held before giving them back")
        }
    }
}
