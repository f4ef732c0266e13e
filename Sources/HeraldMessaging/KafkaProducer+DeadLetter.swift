import Foundation
import HeraldKafka
import HeraldRecords

extension KafkaProducer {
    /// Sends a record a consumer could not read to `herald.deadletter`, with where it came from
    /// and why, so the consumer can go on and an operator can look at it. Best effort: a broker
    /// that refuses it too only loses the copy (the original stays in its topic).
    /// - Parameter consumer: who gave up on it (`herald-sender`, `herald-center`).
    public func sendToDeadLetter(_ message: KafkaConsumerMessage, reason: String, consumer: String) async {
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
        if let value = try? letter.encodedRecord() {
            _ = try? await send(
                KafkaProducerMessage(topic: HeraldTopic.deadLetter.name, key: message.key, value: value))
        }
    }
}
