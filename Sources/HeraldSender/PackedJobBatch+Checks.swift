import HeraldRecords

extension PackedJobBatch {
    /// Token lengths a job record may carry, in bytes (the Open API takes 8 to 100).
    static let tokenByteRange = 8...100

    /// Checks what a herald-center always writes and a crafted record may not: 16-byte push and
    /// app ids, a batch id that is the push id and the sequence, a sequence PostgreSQL can hold,
    /// 1 to ``Herald_V1_JobBatch/maximumTargets`` targets with device ids of 1 to `Int64.max`, tokens of a
    /// device's length and payload indexes within the record's payloads.
    /// - Returns: the sequence, as the database stores it.
    /// - Throws: `RecordDecodingError` naming the first thing wrong.
    func checkedSequence() throws(RecordDecodingError) -> Int32 {
        let (pushID, appID, sequence, payloads) = (header.pushID, header.appID, header.sequence, header.payloads)
        guard pushID.count == 16, appID.count == 16 else {
            throw .unusable(
                Herald_V1_JobBatch.self,
                "the push id is \(pushID.count) bytes and the app id \(appID.count), not 16 each")
        }
        guard let checked = Int32(exactly: sequence) else {
            throw .unusable(
                Herald_V1_JobBatch.self, "batch sequence \(sequence) is out of range (at most \(Int32.max))")
        }
        guard header.batchID == Herald_V1_JobBatch.batchID(pushID: pushID, sequence: sequence) else {
            throw .unusable(Herald_V1_JobBatch.self, "the batch id is not the push id followed by sequence \(sequence)")
        }
        guard (1...Herald_V1_JobBatch.maximumTargets).contains(targets.count) else {
            throw .unusable(
                Herald_V1_JobBatch.self,
                "\(targets.count) targets (a batch has 1 to \(Herald_V1_JobBatch.maximumTargets))")
        }
        for index in 0..<targets.count {
            let deviceID = targets.deviceIDs[index]
            guard deviceID > 0 else {
                throw .unusable(
                    Herald_V1_JobBatch.self, "device id \(UInt64(bitPattern: deviceID)) is out of range")
            }
            guard Self.tokenByteRange.contains(targets.tokenLength(at: index)) else {
                throw .unusable(
                    Herald_V1_JobBatch.self,
                    "device \(deviceID)'s token is \(targets.tokenLength(at: index)) bytes (8 to 100)")
            }
            let payloadIndex = payloadIndexes[index]
            guard Int(payloadIndex) < max(1, payloads.count) else {
                throw .unusable(
                    Herald_V1_JobBatch.self,
                    "device \(deviceID)'s payload index \(payloadIndex) is past the \(payloads.count) payloads"
                )
            }
        }
        return checked
    }
}
