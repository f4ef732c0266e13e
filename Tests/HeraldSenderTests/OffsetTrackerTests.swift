import HeraldKafka
import Testing

@testable import HeraldSender

@Suite("Offset tracker (pure)")
struct OffsetTrackerTests {
    func message(_ offset: Int64, partition: Int32 = 0) -> KafkaConsumerMessage {
        KafkaConsumerMessage(topic: "herald.jobs", partition: partition, offset: offset, key: nil, value: [])
    }

    @Test("an offset is released only when every earlier batch of its partition has finished")
    func inOrder() {
        var tracker = OffsetTracker()
        for offset in Int64(10)...13 { tracker.begin(message(offset)) }
        tracker.begin(message(5, partition: 1))
        #expect(tracker.finish(message(12)) == nil)
        #expect(tracker.finish(message(11)) == nil)
        #expect(tracker.finish(message(5, partition: 1))?.offset == 5)  // partitions are independent
        #expect(tracker.finish(message(10))?.offset == 12)  // 10, 11 and 12 are done
        #expect(tracker.finish(message(13))?.offset == 13)
        #expect(tracker.finish(message(13)) == nil)  // unknown now
    }

    @Test("a partition given back (records from an earlier offset) starts afresh")
    func rewind() {
        var tracker = OffsetTracker()
        tracker.begin(message(20))
        tracker.begin(message(21))
        tracker.begin(message(18))  // redelivered from the committed offset after a rebalance
        #expect(tracker.finish(message(20)) == nil)  // forgotten
        #expect(tracker.finish(message(18))?.offset == 18)
    }
}
