import HeraldKafka

/// Which Kafka offset may be stored while job batches of one partition finish out of order.
///
/// A batch's offset may be stored only when it and every earlier batch of its partition have a
/// final outcome published; storing a later one first would commit past unfinished work. Not
/// thread-safe: the worker keeps it under a lock.
struct OffsetTracker {
    private struct PartitionKey: Hashable {
        let topic: String
        let partition: Int32
    }

    private struct Entry {
        let message: KafkaConsumerMessage
        var done = false
    }

    /// Per partition, the batches in flight in arrival (offset) order.
    private var partitions: [PartitionKey: [Entry]] = [:]

    /// A batch was handed out.
    mutating func begin(_ message: KafkaConsumerMessage) {
        let key = PartitionKey(topic: message.topic, partition: message.partition)
        // A record at or below one already in flight means the partition was taken away and given
        // back (it restarts from the committed offset): forget what was tracked for it.
        if let last = partitions[key]?.last, last.message.offset >= message.offset { partitions[key] = [] }
        partitions[key, default: []].append(Entry(message: message))
    }

    /// A batch has its outcome published.
    /// - Returns: the message whose offset may now be stored (the last of the finished prefix), if any.
    mutating func finish(_ message: KafkaConsumerMessage) -> KafkaConsumerMessage? {
        let key = PartitionKey(topic: message.topic, partition: message.partition)
        guard var entries = partitions[key],
            let index = entries.firstIndex(where: { $0.message.offset == message.offset })
        else {
            return nil
        }
        entries[index].done = true
        var finished = 0
        while finished < entries.count, entries[finished].done { finished += 1 }
        let store = finished > 0 ? entries[finished - 1].message : nil
        entries.removeFirst(finished)
        partitions[key] = entries
        return store
    }
}
