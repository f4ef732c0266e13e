import Foundation
import HeraldCore
import HeraldKafka
import HeraldRecords
import Logging

/// One record of `herald.deadletter`: where it sits and what it holds.
public struct DeadLetterEntry: Sendable {
    public var partition: Int32
    public var offset: Int64
    /// Nil when the dead letter itself cannot be read (then ``unreadable`` says why).
    public var letter: Herald_V1_DeadLetter?
    public var unreadable: String?
}

/// Which dead letters an operator means: by reason, consumer and offset range.
public struct DeadLetterFilter: Sendable, Equatable {
    /// The reason contains this text (case-insensitive); nil: any reason.
    public var reasonContains: String?
    /// The consumer that gave up (`herald-center`, `herald-sender`); nil: any.
    public var consumer: String?
    /// Offsets in `herald.deadletter`, inclusive; nil: unbounded.
    public var fromOffset: Int64?
    public var toOffset: Int64?

    public init(
        reasonContains: String? = nil, consumer: String? = nil, fromOffset: Int64? = nil, toOffset: Int64? = nil
    ) {
        self.reasonContains = reasonContains
        self.consumer = consumer
        self.fromOffset = fromOffset
        self.toOffset = toOffset
    }

    public func matches(_ entry: DeadLetterEntry) -> Bool {
        guard let letter = entry.letter else { return false }
        if let fromOffset, entry.offset < fromOffset { return false }
        if let toOffset, entry.offset > toOffset { return false }
        if let consumer, letter.consumer != consumer { return false }
        if let reasonContains, !letter.reason.lowercased().contains(reasonContains.lowercased()) { return false }
        return true
    }
}

/// Reads `herald.deadletter` and puts letters back where they came from: what `herald kafka
/// dead-letters` does (docs/operations.md, "reading and replaying herald.deadletter").
public enum DeadLetterArchive {
    /// Every letter in the topic, read from its beginning by a consumer group of its own (so no
    /// other reader's position moves), until `idle` passes without a record once partitions
    /// are assigned, or `limit` passes.
    /// - Throws: ``KafkaError`` when the consumer cannot be created.
    public static func read(
        settings: KafkaSettings, idle: Duration = .seconds(3), limit: Duration = .seconds(120), logger: Logger
    ) async throws -> [DeadLetterEntry] {
        var configuration = settings.consumerConfiguration(
            groupID: "herald-dead-letters-\(UUID().uuidString.prefix(8).lowercased())",
            topics: [HeraldTopic.deadLetter.name], clientID: "dead-letters")
        configuration.autoOffsetReset = "earliest"
        let consumer = try KafkaConsumer(configuration: configuration, logger: logger)
        var entries: [DeadLetterEntry] = []
        let started = ContinuousClock.now
        // Idle time counts from the assignment (joining a group takes a while) or the last record.
        var lastRecord: ContinuousClock.Instant?
        do {
            while let batch = try await consumer.nextMessages() {
                let now = ContinuousClock.now
                if batch.isEmpty {
                    if lastRecord == nil, !consumer.assignment.isEmpty { lastRecord = now }
                    if let lastRecord, now - lastRecord > idle { break }
                    if now - started > limit { break }
                    continue
                }
                lastRecord = now
                for message in batch {
                    entries.append(entry(message))
                }
            }
        } catch {
            try? await consumer.close()
            throw error
        }
        try? await consumer.close()
        return entries.sorted { ($0.partition, $0.offset) < ($1.partition, $1.offset) }
    }

    static func entry(_ message: KafkaConsumerMessage) -> DeadLetterEntry {
        do {
            return DeadLetterEntry(
                partition: message.partition, offset: message.offset,
                letter: try Herald_V1_DeadLetter.decodeRecord(message.value))
        } catch {
            return DeadLetterEntry(
                partition: message.partition, offset: message.offset, letter: nil, unreadable: "\(error)")
        }
    }

    /// Produces each letter's original key and value to its original topic and waits until the
    /// broker has them all.
    /// - Returns: how many records were produced.
    /// - Throws: ``KafkaError`` when the broker did not take one (some may have been written:
    ///   replaying again is safe, Herald's consumers are idempotent).
    @discardableResult
    public static func replay(_ entries: [DeadLetterEntry], producer: KafkaProducer) async throws -> Int {
        let messages = entries.compactMap { entry -> KafkaProducerMessage? in
            guard let letter = entry.letter, !letter.originalTopic.isEmpty else { return nil }
            return KafkaProducerMessage(
                topic: letter.originalTopic, key: letter.originalKey.isEmpty ? nil : Array(letter.originalKey),
                value: Array(letter.originalValue))
        }
        try await producer.send(messages)
        return messages.count
    }
}
