import Testing

@testable import HeraldKafka

@Suite("Kafka producer and consumer lifecycles (pure)")
struct KafkaLifecycleTests {
    @Test("producer: open accepts records; shutdown flushes with every caller waiting; closed resumes at once")
    func producer() {
        var lifecycle = KafkaProducerLifecycle<String>()
        #expect(lifecycle.acceptsRecords)
        let first = lifecycle.shutdown(notifying: "first")
        #expect(first == .wait)
        #expect(!lifecycle.acceptsRecords, "no record is taken once shutdown is asked")
        let second = lifecycle.shutdown(notifying: "second")
        #expect(second == .wait)
        let resumed = lifecycle.threadFinished()
        #expect(resumed == ["first", "second"])
        let late = lifecycle.shutdown(notifying: "late")
        #expect(late == .resume)
        let again = lifecycle.threadFinished()
        #expect(again.isEmpty)
    }

    @Test("producer: released without shutdown, the thread still flushes and stops")
    func producerReleased() {
        var lifecycle = KafkaProducerLifecycle<String>()
        lifecycle.stopRequested()
        #expect(!lifecycle.acceptsRecords)
        let action = lifecycle.shutdown(notifying: "waiter")
        #expect(action == .wait)
        let resumed = lifecycle.threadFinished()
        #expect(resumed == ["waiter"])
    }

    @Test("consumer: the first close closes, later ones do nothing; pulls end once closing starts")
    func consumer() {
        var lifecycle = KafkaConsumerLifecycle()
        #expect(lifecycle.isOpen)
        let first = lifecycle.close()
        #expect(first == .close)
        #expect(!lifecycle.isOpen)
        let second = lifecycle.close()
        #expect(second == .none)
        lifecycle.closeFinished()
        #expect(lifecycle.state == .closed)
        let late = lifecycle.close()
        #expect(late == .none)
    }
}
