import Foundation
import HeraldCore
import HeraldKafka
import HeraldRecords
import HeraldTiming
import Logging
import Synchronization

/// Records this process sent to `herald.deadletter` since it started
/// (`herald_dead_letters_total`, written with the Kafka clients' families by
/// ``KafkaClientHealth/prometheusText(_:)``): one process-wide count, as a dead letter is rare and
/// each one wants an operator (docs/operations.md, the dead-letter runbook).
public enum DeadLetterCount {
    static let sent = Atomic<Int>(0)

    public static var value: Int { sent.load(ordering: .relaxed) }
}

extension KafkaProducer {
    /// Sends a record a consumer cannot use to `herald.deadletter`, with where it came from and
    /// why, and returns when the broker acknowledged it.
    /// - Parameter consumer: who gave up on it (`herald-sender`, `herald-center`).
    /// - Throws: ``KafkaError`` when the broker did not take it.
    public func sendToDeadLetter(_ message: KafkaConsumerMessage, reason: String, consumer: String) async throws {
        var letter = Herald_V1_DeadLetter()
        letter.schemaVersion = 1
        letter.originalTopic = message.topic
        letter.originalPartition = message.partition
        letter.originalOffset = message.offset
        letter.originalKey = Data(message.key ?? [])
        letter.originalValue = Data(message.value)
        letter.reason = reason
        letter.consumer = consumer
        letter.failedAtMs = Int64(Date().timeIntervalSince1970 * 1000)
        try await send(
            KafkaProducerMessage(
                topic: HeraldTopic.deadLetter.name, key: message.key, value: try letter.encodedRecord()))
        DeadLetterCount.sent.add(1, ordering: .relaxed)
    }

    /// ``sendToDeadLetter(_:reason:consumer:)`` until the broker acknowledges it, waiting out an
    /// outage: the consumer stores the record's offset only after this returns, so a record is
    /// never skipped without a trace (it is retried instead).
    /// - Throws: `CancellationError` when stopped meanwhile (store no offset then).
    public func deadLetterUntilAcknowledged(
        _ message: KafkaConsumerMessage, reason: String, consumer: String, logger: Logger
    ) async throws {
        logger.error(
            "record sent to the dead-letter topic",
            metadata: [
                "topic": "\(message.topic)", "partition": "\(message.partition)", "offset": "\(message.offset)",
                "reason": "\(reason)",
            ])
        var waits = Backoff.outage.delays()
        while true {
            do {
                try await sendToDeadLetter(message, reason: reason, consumer: consumer)
                return
            } catch let error as KafkaError {
                try Task.checkCancellation()
                let delay = waits.next()
                logger.warning(
                    "cannot dead-letter a record; its offset waits until the broker takes it",
                    metadata: ["offset": "\(message.offset)", "error": "\(error)", "retry-in": "\(delay)"])
                try await Task.sleep(for: delay)
            } catch let error as CancellationError {
                throw error
            } catch {
                // Not the broker: the letter itself could not be encoded, and trying again cannot help.
                logger.critical(
                    "cannot encode a dead letter", metadata: ["offset": "\(message.offset)", "error": "\(error)"])
                return
            }
        }
    }
}
