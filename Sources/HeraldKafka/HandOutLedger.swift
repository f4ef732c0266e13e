/// Which records a consumer handed out that its caller has not stored yet, per partition, so a
/// revoke can wait for them before it commits (``KafkaConsumerConfiguration/revokeGrace``).
///
/// Without that wait, a record still being handled when its partition is taken away comes again
/// to the partition's next owner, which handles it a second time while the first owner finishes
/// it: a sender that joins or leaves its group mid-broadcast would send up to its batches in
/// flight twice. Offsets only: pure, not thread-safe (the consumer keeps it under a lock, the
/// same lock under which a revoke is counted, so a record is either handed out before a revoke,
/// and waited for, or not handed out at all).
struct HandOutLedger {
    /// Per partition: the offset after the last record handed out.
    private var handedOut: [KafkaTopicPartition: Int64] = [:]
    /// Per partition: the offset after the last one stored (or, before any store, the first
    /// record handed out: nothing before it is this member's to handle).
    private var stored: [KafkaTopicPartition: Int64] = [:]

    /// A record of `partition` at `offset` was handed to the caller.
    mutating func handOut(_ partition: KafkaTopicPartition, offset: Int64) {
        if stored[partition] == nil { stored[partition] = offset }
        handedOut[partition] = max(handedOut[partition] ?? 0, offset + 1)
    }

    /// The caller stored `nextOffset` for `partition`: every record before it is handled.
    mutating func store(_ partition: KafkaTopicPartition, nextOffset: Int64) {
        stored[partition] = max(stored[partition] ?? 0, nextOffset)
    }

    /// How many offsets of `partitions` were handed out and not stored yet (records, unless the
    /// partition has gaps in its offsets).
    func unstored(in partitions: [KafkaTopicPartition]) -> Int64 {
        partitions.reduce(0) { total, partition in
            total + max(0, (handedOut[partition] ?? 0) - (stored[partition] ?? 0))
        }
    }

    /// `partitions` were taken away: what comes of them next starts afresh.
    mutating func forget(_ partitions: [KafkaTopicPartition]) {
        for partition in partitions {
            handedOut[partition] = nil
            stored[partition] = nil
        }
    }
}
