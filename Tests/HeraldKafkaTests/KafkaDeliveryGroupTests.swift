import Testing

@testable import HeraldKafka

/// The delivery-report bookkeeping, without a broker.
struct KafkaDeliveryGroupTests {
    @Test func reportsArrivingBeforeTheWaiterAreKept() async throws {
        let group = KafkaDeliveryGroup(count: 2)
        group.delivered(KafkaDeliveryReport(partition: 1, offset: 7))
        group.delivered(KafkaDeliveryReport(partition: 2, offset: 9))
        let report = try await group.wait()
        #expect(report == KafkaDeliveryReport(partition: 2, offset: 9))
    }

    @Test func theFirstFailureIsThrownAfterAllReports() async throws {
        let group = KafkaDeliveryGroup(count: 3)
        let waiter = Task { try await group.wait() }
        group.delivered(KafkaDeliveryReport(partition: 0, offset: 1))
        group.failed(KafkaError(kind: .broker, code: 1, name: "FIRST", message: "first"))
        group.failed(KafkaError(kind: .broker, code: 2, name: "SECOND", message: "second"))
        do {
            _ = try await waiter.value
            Issue.record("wait should throw")
        } catch let error as KafkaError {
            #expect(error.name == "FIRST")
        }
    }
}
