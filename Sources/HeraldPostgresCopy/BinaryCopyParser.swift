/// One row of a binary COPY stream: its fields as raw bytes, in PostgreSQL's binary formats
/// (integers big-endian, `bytea` and `text` as their bytes).
///
/// A view into libpq's buffer: valid only while the row handler runs.
public struct BinaryCopyRow {
    let bytes: UnsafeRawBufferPointer
    /// (start, length) of each field in `bytes`; length -1 is NULL.
    let fields: UnsafeBufferPointer<(Int, Int)>

    /// How many fields the row has.
    public var count: Int { fields.count }

    /// Field `index`'s bytes; nil when it is NULL.
    public func field(_ index: Int) -> UnsafeRawBufferPointer? {
        let (start, length) = fields[index]
        guard length >= 0 else { return nil }
        return UnsafeRawBufferPointer(rebasing: bytes[start..<(start + length)])
    }

    /// Field `index` as a `bigint`; nil when it is NULL or not 8 bytes.
    public func int64(_ index: Int) -> Int64? {
        guard let field = field(index), field.count == 8 else { return nil }
        return Int64(bigEndian: field.loadUnaligned(as: Int64.self))
    }
}

/// Reads the tuples of binary COPY data as libpq delivers it: one `CopyData` message per row,
/// the file header in front of the first, a trailer (field count -1) at the end.
struct BinaryCopyParser {
    static let signature: [UInt8] = Array("PGCOPY\n".utf8) + [0xFF, 0x0D, 0x0A, 0x00]
    private var headerRead = false
    private var ended = false
    /// Reused for every row so parsing allocates nothing per row.
    private var fields: [(Int, Int)] = []

    mutating func rows(in message: UnsafeRawBufferPointer, _ row: (BinaryCopyRow) throws -> Void) throws {
        var position = 0
        if !headerRead {
            // Signature, 32-bit flags, 32-bit header-extension length, the extension.
            guard message.count >= Self.signature.count + 8,
                message.prefix(Self.signature.count).elementsEqual(Self.signature)
            else {
                throw PostgresCopyError("the COPY stream is not in PostgreSQL's binary format")
            }
            position = Self.signature.count + 4
            let extensionLength = Int(try Self.int32(message, at: position))
            position += 4 + extensionLength
            headerRead = true
        }
        while position < message.count {
            guard !ended else { throw PostgresCopyError("the COPY stream has data after its end") }
            let fieldCount = Int(try Self.int16(message, at: position))
            position += 2
            if fieldCount == -1 {
                ended = true
                continue
            }
            fields.removeAll(keepingCapacity: true)
            for _ in 0..<fieldCount {
                let length = Int(try Self.int32(message, at: position))
                position += 4
                if length < 0 {
                    fields.append((position, -1))
                    continue
                }
                guard position + length <= message.count else {
                    throw PostgresCopyError(
                        "a COPY row is cut short (a field of \(length) bytes at \(position) of \(message.count))")
                }
                fields.append((position, length))
                position += length
            }
            try fields.withUnsafeBufferPointer { try row(BinaryCopyRow(bytes: message, fields: $0)) }
        }
    }

    private static func int16(_ bytes: UnsafeRawBufferPointer, at position: Int) throws -> Int16 {
        guard position + 2 <= bytes.count else { throw PostgresCopyError("a COPY row is cut short") }
        return Int16(bigEndian: bytes.loadUnaligned(fromByteOffset: position, as: Int16.self))
    }

    private static func int32(_ bytes: UnsafeRawBufferPointer, at position: Int) throws -> Int32 {
        guard position + 4 <= bytes.count else { throw PostgresCopyError("a COPY row is cut short") }
        return Int32(bigEndian: bytes.loadUnaligned(fromByteOffset: position, as: Int32.self))
    }
}
