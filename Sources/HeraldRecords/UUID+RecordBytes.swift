#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension UUID {
    /// The UUID in 16 bytes of a record field (all zeros if the field is not 16 bytes long).
    public init(data: Data) {
        var bytes = [UInt8](repeating: 0, count: 16)
        if data.count == 16 { bytes = Array(data) }
        self = bytes.withUnsafeBytes { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) }
    }

    /// The 16 bytes records carry for a UUID (push ids, app ids).
    public var recordBytes: Data { withUnsafeBytes(of: uuid) { Data($0) } }
}
