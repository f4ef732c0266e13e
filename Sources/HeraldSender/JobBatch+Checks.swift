import HeraldRecords

extension Herald_V1_JobBatch {
    /// Token lengths a job record may carry, in bytes (the Open API takes 8 to 100).
    static let tokenByteRange = 8...100

    /// Checks what a herald-center always writes and a crafted record may not: 16-byte push and
    /// app ids, a batch id that is the push id and the sequence, a sequence PostgreSQL can hold,
    /// 1 to ``maximumTargets`` targets with device ids of 1 to `Int64.max`, tokens of a
    /// device's length and payload indexes within the record's payloads.
    /// - Returns: the sequence, as the database stores it.
    /// - Throws: `RecordDecodingError` naming the first thing wrong.
    func checkedSequence() throws(RecordDecodingError) -> Int32 {
        guard pushID.count == 16, appID.count == 16 else {
            throw .unusable(
                Herald_V1_JobBatch.self,
                "the push id is \(pushID.count) bytes and the app id \(appID.count), not 16 each")
        }
        guard let checked = Int32(exactly: sequence) else {
            throw .unusable(
                Herald_V1_JobBatch.self, "batch sequence \(sequence) is out of range (at most \(Int32.max))")
        }
        guard batchID == Self.batchID(pushID: pushID, sequence: sequence) else {
            throw .unusable(Herald_V1_JobBatch.self, "the batch id is not the push id followed by sequence \(sequence)")
        }
        guard (1...Self.maximumTargets).contains(targets.count) else {
            throw .unusable(
                Herald_V1_JobBatch.self, "\(targets.count) targets (a batch has 1 to \(Self.maximumTargets))")
        }
        for target in targets {
            guard target.deviceID != 0, target.deviceID <= UInt64(Int64.max) else {
                throw .unusable(Herald_V1_JobBatch.self, "device id \(target.deviceID) is out of range")
            }
            guard Self.tokenByteRange.contains(target.token.count) else {
                throw .unusable(
                    Herald_V1_JobBatch.self,
                    "device \(target.deviceID)'s token is \(target.token.count) bytes (8 to 100)")
            }
            guard Int(target.payloadIndex) < max(1, payloads.count) else {
                throw .unusable(
                    Herald_V1_JobBatch.self,
                    "device \(target.deviceID)'s payload index \(target.payloadIndex) is past the \(payloads.count) payloads"
                )
            }
        }
        return checked
    }
}
