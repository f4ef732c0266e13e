import Foundation
import SwiftProtobuf

/// A job batch as herald-sender reads it: every field of the record but the targets decoded by
/// SwiftProtobuf into ``header``, the targets read by hand into packed arrays — no `Target`
/// message and no `Data` per device (two allocations per token, made and freed once per
/// notification sent). The counterpart of the center's
/// ``Herald_V1_JobBatch/encodedRecord(targets:payloadIndexes:)``.
public struct PackedJobBatch: Sendable {
    /// The record's fields but its targets (`header.targets` is empty).
    public var header: Herald_V1_JobBatch
    /// Each target's device id and token. A device id past `Int64.max` (which no registration has)
    /// reads as a negative one.
    public var targets: DeviceTokens
    /// Each target's `payload_index` (0 when the record left it out), at the target's position.
    public var payloadIndexes: [UInt32]

    /// Reads a job record.
    /// - Throws: ``RecordDecodingError`` for bytes that are not a job record, or one of a schema
    ///   version this build does not read.
    public static func decodeRecord(_ bytes: [UInt8]) throws(RecordDecodingError) -> PackedJobBatch {
        var rest: [UInt8] = []
        var targets = DeviceTokens()
        var payloadIndexes: [UInt32] = []
        do {
            try bytes.withUnsafeBufferPointer { record throws(WireFormatError) in
                var reader = WireReader(record)
                while !reader.isAtEnd {
                    let fieldStart = reader.position
                    let (field, wireType) = try reader.tag()
                    if field == 13 && wireType == 2 {
                        var target = WireReader(try reader.lengthDelimited())
                        try readTarget(from: &target, into: &targets, payloadIndexes: &payloadIndexes)
                    } else {
                        try reader.skip(wireType)
                        // Everything else (a few hundred bytes: ids, topic, payload) goes to
                        // SwiftProtobuf as it came.
                        rest.append(contentsOf: record[fieldStart..<reader.position])
                    }
                }
            }
        } catch {
            throw RecordDecodingError(recordType: "\(Herald_V1_JobBatch.self)", reason: "not a valid record (\(error))")
        }
        let header: Herald_V1_JobBatch
        do {
            header = try Herald_V1_JobBatch.decodeRecord(rest)
        } catch let error as RecordDecodingError {
            throw error
        } catch {
            throw RecordDecodingError(recordType: "\(Herald_V1_JobBatch.self)", reason: "\(error)")
        }
        return PackedJobBatch(header: header, targets: targets, payloadIndexes: payloadIndexes)
    }

    /// Reads one `Target { uint64 device_id = 1; bytes token = 2; uint32 payload_index = 3; }`
    /// (fields in any order, the last of a repeated one counting, unknown ones skipped, as
    /// Protocol Buffers readers do).
    private static func readTarget(
        from target: inout WireReader, into targets: inout DeviceTokens, payloadIndexes: inout [UInt32]
    ) throws(WireFormatError) {
        var deviceID: UInt64 = 0
        var payloadIndex: UInt32 = 0
        var token = UnsafeBufferPointer<UInt8>(start: nil, count: 0)
        while !target.isAtEnd {
            switch try target.tag() {
            case (1, 0): deviceID = try target.varint()
            case (2, 2): token = try target.lengthDelimited()
            case (3, 0): payloadIndex = UInt32(truncatingIfNeeded: try target.varint())
            case (1, _), (2, _), (3, _): throw WireFormatError(reason: "a target's field has the wrong wire type")
            case (_, let wireType): try target.skip(wireType)
            }
        }
        targets.append(deviceID: Int64(bitPattern: deviceID), token: token)
        payloadIndexes.append(payloadIndex)
    }
}

/// Bytes that do not follow the Protocol Buffers wire format.
struct WireFormatError: Error, CustomStringConvertible {
    var reason: String
    var description: String { reason }
}

/// Reads Protocol Buffers' wire format from a buffer that outlives it (a nested message is read
/// by a reader of its own, over the bytes ``lengthDelimited()`` returns).
struct WireReader {
    private let bytes: UnsafeBufferPointer<UInt8>
    private(set) var position = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    var isAtEnd: Bool { position >= bytes.count }

    mutating func varint() throws(WireFormatError) -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while position < bytes.count {
            let byte = bytes[position]
            position += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return value }
            shift += 7
            if shift >= 64 { throw WireFormatError(reason: "a varint longer than 10 bytes") }
        }
        throw WireFormatError(reason: "the record ends inside a varint")
    }

    /// The next field's number and wire type.
    mutating func tag() throws(WireFormatError) -> (field: UInt64, wireType: UInt64) {
        let tag = try varint()
        guard tag >> 3 != 0 else { throw WireFormatError(reason: "field number 0") }
        return (tag >> 3, tag & 7)
    }

    /// A length-delimited field's bytes.
    mutating func lengthDelimited() throws(WireFormatError) -> UnsafeBufferPointer<UInt8> {
        let length = try varint()
        guard length <= UInt64(bytes.count - position) else {
            throw WireFormatError(reason: "a field of \(length) bytes runs past the record's end")
        }
        let start = position
        position += Int(length)
        return UnsafeBufferPointer(rebasing: bytes[start..<position])
    }

    /// Passes over a field's value of `wireType`.
    mutating func skip(_ wireType: UInt64) throws(WireFormatError) {
        switch wireType {
        case 0: _ = try varint()
        case 1: try advance(8)
        case 2: _ = try lengthDelimited()
        case 5: try advance(4)
        default: throw WireFormatError(reason: "wire type \(wireType), which no Herald record uses")
        }
    }

    private mutating func advance(_ count: Int) throws(WireFormatError) {
        guard count <= bytes.count - position else { throw WireFormatError(reason: "the record ends inside a field") }
        position += count
    }
}
