import Foundation
import HeraldRecords
import Testing

@Suite struct RecordCodecTests {
    func sampleBatch(targets: Int) -> Herald_V1_JobBatch {
        Herald_V1_JobBatch(
            pushID: Data((0..<16).map { UInt8($0) }), appID: Data(repeating: 7, count: 16), sequence: 42,
            environment: .production, apnsTopic: "com.example.app", pushType: .alert, priority: 10, expirationS: 0,
            collapseID: "news-1", payload: Data(#"{"aps":{"alert":"hello"}}"#.utf8),
            targets: (0..<targets).map { index in
                .init(
                    deviceID: UInt64(1_000_000 + index),
                    token: Data((0..<32).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ index) }))
            },
            createdAtMs: 0)
    }

    @Test func theInitializerDerivesTheBatchID() {
        let batch = sampleBatch(targets: 1)
        #expect(batch.batchID == Herald_V1_JobBatch.batchID(pushID: batch.pushID, sequence: 42))
    }

    @Test func jobBatchRoundTrips() throws {
        let batch = sampleBatch(targets: 500)
        let bytes = try batch.encodedRecord()
        var expected = batch
        expected.schemaVersion = 1
        #expect(try Herald_V1_JobBatch.decodeRecord(bytes) == expected)
        // Compact: 500 targets with 32-byte tokens stay near 20 KB.
        #expect(bytes.count < 500 * 40 + 200)
    }

    @Test func batchIDsAreDeterministic() {
        let pushID = Data(repeating: 0xAB, count: 16)
        let id = Herald_V1_JobBatch.batchID(pushID: pushID, sequence: 0x0102_0304)
        #expect(id == pushID + Data([1, 2, 3, 4]))
        #expect(
            Herald_V1_JobBatch.batchID(pushID: pushID, sequence: 5)
                == Herald_V1_JobBatch.batchID(pushID: pushID, sequence: 5))
    }

    @Test func unknownSchemaVersionIsRefused() throws {
        var outcome = Herald_V1_OutcomeBatch()
        outcome.schemaVersion = 2
        outcome.acceptedDeviceIds = [1, 2, 3]
        let bytes: [UInt8] = try outcome.serializedBytes()
        #expect(throws: RecordDecodingError.self) { try Herald_V1_OutcomeBatch.decodeRecord(bytes) }
    }

    @Test func garbageIsRefused() {
        #expect(throws: RecordDecodingError.self) { try Herald_V1_PushEvent.decodeRecord([0xFF, 0xFF, 0xFF]) }
    }

    @Test func outcomesCarryTheUnregisteredTimestamp() throws {
        var outcome = Herald_V1_OutcomeBatch()
        outcome.acceptedDeviceIds = Array(1...500)
        var failure = Herald_V1_OutcomeBatch.Failure()
        failure.deviceID = 501
        failure.status = .rejected
        failure.reason = "Unregistered"
        failure.httpStatus = 410
        failure.unregisteredAtMs = 1_700_000_000_000
        outcome.failures = [failure]
        let decoded = try Herald_V1_OutcomeBatch.decodeRecord(try outcome.encodedRecord())
        #expect(decoded.failures.first?.unregisteredAtMs == 1_700_000_000_000)
        #expect(decoded.acceptedDeviceIds.count == 500)
    }
}
