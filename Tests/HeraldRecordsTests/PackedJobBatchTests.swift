import Foundation
import HeraldRecords
import Testing

@Suite("Job records read with packed targets, as herald-sender reads them")
struct PackedJobBatchTests {
    /// A templated batch: tokens of several lengths, payload indexes (0 left out of the record
    /// by proto3), device ids up to `Int64.max`.
    func batch() -> Herald_V1_JobBatch {
        let targets = (0..<40).map { index -> Herald_V1_JobBatch.Target in
            let deviceID: UInt64 = index == 39 ? UInt64(Int64.max) : UInt64(index + 1)
            let token = Data((0..<(8 + index * 2)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) })
            return Herald_V1_JobBatch.Target(deviceID: deviceID, token: token)
        }
        var batch = Herald_V1_JobBatch(
            pushID: Data((0..<16).map { UInt8($0) }), appID: Data(repeating: 7, count: 16), sequence: 3,
            environment: .sandbox, apnsTopic: "com.example.app", pushType: .alert, priority: 5, expirationS: 90,
            collapseID: "news", payload: Data(), targets: targets, createdAtMs: 1_700_000_000_000)
        batch.payloads = [Data(#"{"aps":{"alert":"a"}}"#.utf8), Data(#"{"aps":{"alert":"b"}}"#.utf8)]
        for index in batch.targets.indices { batch.targets[index].payloadIndex = UInt32(index % 2) }
        return batch
    }

    func expectSame(_ packed: PackedJobBatch, as batch: Herald_V1_JobBatch) {
        var header = batch
        header.targets = []
        header.schemaVersion = 1
        #expect(packed.header == header)
        #expect(packed.targets.count == batch.targets.count)
        #expect(packed.targets.deviceIDs == batch.targets.map { Int64(bitPattern: $0.deviceID) })
        #expect(packed.payloadIndexes == batch.targets.map(\.payloadIndex))
        for (index, target) in batch.targets.enumerated() {
            #expect(packed.targets.tokenLength(at: index) == target.token.count)
            #expect(packed.targets.withToken(at: index) { Data($0) } == target.token)
        }
    }

    @Test("a record SwiftProtobuf wrote reads the same: every field, every target")
    func readsWhatSwiftProtobufWrote() throws {
        let batch = batch()
        expectSame(try PackedJobBatch.decodeRecord(batch.encodedRecord()), as: batch)
    }

    @Test("a record the center wrote with packed targets reads the same")
    func readsWhatTheCenterWrote() throws {
        let batch = batch()
        var header = batch
        header.targets = []
        var targets = DeviceTokens()
        for target in batch.targets {
            targets.append(deviceID: Int64(bitPattern: target.deviceID), token: target.token)
        }
        let bytes = try header.encodedRecord(targets: targets, payloadIndexes: batch.targets.map(\.payloadIndex))
        expectSame(try PackedJobBatch.decodeRecord(bytes), as: batch)
    }

    @Test("a target's fields in any order, repeated or unknown, read as Protocol Buffers reads them")
    func targetFieldsInAnyOrder() throws {
        var header = batch()
        header.targets = []
        var bytes = try header.encodedRecord()
        // Target { unknown 9 = 300 (varint); token = 0xAA 0xBB; device_id = 5; device_id = 6;
        //          unknown 10 = fixed32; payload_index = 1 }
        let target: [UInt8] = [
            0x48, 0xAC, 0x02,  // 9 << 3 | 0, 300
            0x12, 2, 0xAA, 0xBB,  // 2 << 3 | 2
            0x08, 5, 0x08, 6,  // 1 << 3 | 0, twice
            0x55, 1, 2, 3, 4,  // 10 << 3 | 5
            0x18, 1,  // 3 << 3 | 0
        ]
        bytes.append(0x6A)  // 13 << 3 | 2
        bytes.append(UInt8(target.count))
        bytes.append(contentsOf: target)
        let packed = try PackedJobBatch.decodeRecord(bytes)
        #expect(packed.targets.deviceIDs == [6])
        #expect(packed.payloadIndexes == [1])
        #expect(packed.targets.withToken(at: 0) { Array($0) } == [0xAA, 0xBB])
    }

    @Test("bytes that are not a job record are refused with a reason")
    func malformedRecordsAreRefused() throws {
        let bytes = try batch().encodedRecord()
        // Cut inside the last target.
        #expect(throws: RecordDecodingError.self) { try PackedJobBatch.decodeRecord(Array(bytes.dropLast(3))) }
        // A target whose device id comes length-delimited.
        var header = batch()
        header.targets = []
        let wrongType: [UInt8] = try header.encodedRecord() + [0x6A, 3, 0x0A, 1, 0]
        #expect(throws: RecordDecodingError.self) { try PackedJobBatch.decodeRecord(wrongType) }
        // A varint that never ends.
        #expect(throws: RecordDecodingError.self) { try PackedJobBatch.decodeRecord([0x80, 0x80]) }
        // Another schema version.
        var future = batch()
        future.schemaVersion = 2
        #expect(throws: RecordDecodingError.self) { try PackedJobBatch.decodeRecord(future.serializedBytes()) }
    }
}
