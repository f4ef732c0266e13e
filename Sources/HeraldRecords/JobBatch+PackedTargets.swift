import SwiftProtobuf

extension Herald_V1_JobBatch {
    /// The encoded record of this batch with the targets given as packed arrays — the
    /// herald-center's hot path: no `Target` message and no `Data` per device.
    ///
    /// The rest of the record is encoded by SwiftProtobuf; the targets are written by hand as the
    /// repeated field 13 (`Target { uint64 device_id = 1; bytes token = 2; uint32 payload_index = 3; }`)
    /// after it. Protobuf
    /// readers take fields in any order, so the result decodes to the same message as setting
    /// `targets` and calling ``encodedRecord()``.
    ///
    /// - Parameters:
    ///   - targets: each target's device id and token (their personalization values are not
    ///     part of the record).
    ///   - payloadIndexes: a templated push's `payload_index` of each target (as many as
    ///     `targets`), or empty.
    public func encodedRecord(targets packed: DeviceTokens, payloadIndexes: [UInt32] = []) throws -> [UInt8] {
        let deviceIDs = packed.deviceIDs
        let tokenBytes = packed.tokenBytes
        let tokenEnds = packed.tokenEnds
        precondition(targets.isEmpty && (payloadIndexes.isEmpty || payloadIndexes.count == deviceIDs.count))
        var bytes = try encodedRecord()
        bytes.reserveCapacity(bytes.count + tokenBytes.count + deviceIDs.count * 10)
        var start = 0
        for index in deviceIDs.indices {
            let deviceID = UInt64(bitPattern: deviceIDs[index])
            let end = Int(tokenEnds[index])
            let tokenLength = end - start
            let payloadIndex = payloadIndexes.isEmpty ? 0 : UInt64(payloadIndexes[index])
            // Proto3 leaves out fields at their default value, as SwiftProtobuf does.
            var length = 0
            if deviceID != 0 { length += 1 + Self.varintSize(deviceID) }
            if tokenLength > 0 { length += 1 + Self.varintSize(UInt64(tokenLength)) + tokenLength }
            if payloadIndex != 0 { length += 1 + Self.varintSize(payloadIndex) }
            bytes.append(Self.targetsTag)
            Self.appendVarint(UInt64(length), to: &bytes)
            if deviceID != 0 {
                bytes.append(Self.deviceIDTag)
                Self.appendVarint(deviceID, to: &bytes)
            }
            if tokenLength > 0 {
                bytes.append(Self.tokenTag)
                Self.appendVarint(UInt64(tokenLength), to: &bytes)
                bytes.append(contentsOf: tokenBytes[start..<end])
            }
            if payloadIndex != 0 {
                bytes.append(Self.payloadIndexTag)
                Self.appendVarint(payloadIndex, to: &bytes)
            }
            start = end
        }
        return bytes
    }

    /// Field 13, length-delimited.
    static let targetsTag: UInt8 = 13 << 3 | 2
    /// `Target.device_id`: field 1, varint.
    static let deviceIDTag: UInt8 = 1 << 3 | 0
    /// `Target.token`: field 2, length-delimited.
    static let tokenTag: UInt8 = 2 << 3 | 2
    /// `Target.payload_index`: field 3, varint.
    static let payloadIndexTag: UInt8 = 3 << 3 | 0

    static func varintSize(_ value: UInt64) -> Int {
        var value = value
        var size = 1
        while value >= 0x80 {
            value >>= 7
            size += 1
        }
        return size
    }

    static func appendVarint(_ value: UInt64, to bytes: inout [UInt8]) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }
}
