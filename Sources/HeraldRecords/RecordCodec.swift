import SwiftProtobuf

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A record that could not be read, or read but not used as it is (numbers out of range, ids
/// that do not fit together). Consumers send such records to the dead-letter topic (`herald.deadletter`) with it.
public struct RecordDecodingError: Error, Sendable, CustomStringConvertible {
    public var recordType: String
    public var reason: String

    public var description: String { "cannot read \(recordType) record: \(reason)" }

    public init(recordType: String, reason: String) {
        self.recordType = recordType
        self.reason = reason
    }

    /// A `Record` that was read but cannot be used, for `reason`.
    public static func unusable<Record: HeraldRecord>(_: Record.Type, _ reason: String) -> RecordDecodingError {
        RecordDecodingError(recordType: "\(Record.self)", reason: reason)
    }
}

/// A Kafka record format of Herald: a Protocol Buffers message with a `schema_version` field.
public protocol HeraldRecord: SwiftProtobuf.Message {
    /// The layout this build writes and reads.
    static var currentSchemaVersion: UInt32 { get }
    var schemaVersion: UInt32 { get set }
}

extension HeraldRecord {
    public static var currentSchemaVersion: UInt32 { 1 }

    /// The record as bytes for a Kafka value, stamped with the current schema version.
    public func encodedRecord() throws -> [UInt8] {
        var record = self
        record.schemaVersion = Self.currentSchemaVersion
        return try record.serializedBytes()
    }

    /// Reads a record written by any build that uses the same schema version.
    /// - Throws: ``RecordDecodingError`` for bytes that are not such a record, or a record of a
    ///   schema version this build does not know.
    public static func decodeRecord(_ bytes: [UInt8]) throws -> Self {
        let record: Self
        do {
            record = try Self(serializedBytes: bytes)
        } catch {
            throw RecordDecodingError(recordType: "\(Self.self)", reason: "not a valid record (\(error))")
        }
        guard record.schemaVersion == currentSchemaVersion else {
            throw RecordDecodingError(
                recordType: "\(Self.self)",
                reason: "schema version \(record.schemaVersion), this build reads \(currentSchemaVersion)"
            )
        }
        return record
    }
}

extension Herald_V1_PushEvent: HeraldRecord {}
extension Herald_V1_JobBatch: HeraldRecord {}
extension Herald_V1_OutcomeBatch: HeraldRecord {}
extension Herald_V1_DeadLetter: HeraldRecord {}

extension Herald_V1_JobBatch {
    /// The deterministic id of batch `sequence` of a push: the push id followed by the sequence
    /// number, big endian.
    public static func batchID(pushID: Data, sequence: UInt32) -> Data {
        pushID + [
            UInt8(truncatingIfNeeded: sequence >> 24), UInt8(truncatingIfNeeded: sequence >> 16),
            UInt8(truncatingIfNeeded: sequence >> 8), UInt8(truncatingIfNeeded: sequence),
        ]
    }
}
