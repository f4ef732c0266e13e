#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// HPACK (RFC 7541) for the header blocks Herald's client sends: each field as an index into the
/// static or dynamic table where one matches, otherwise as a literal, and every string as its
/// plain bytes (never Huffman-coded).
///
/// Why plain strings: an APNs request's large values — the device token in `:path`, the
/// provider token in `authorization`, `apns-id` — are new literals on every request (Apple asks
/// for them unindexed). Huffman-coding them was 9% of herald-sender's CPU under nghttp2, and
/// decoding them a larger share of the server's; sent plain they cost a copy on each side and
/// about 80 bytes more per request on the wire. Fields not marked never-indexed are added to the
/// dynamic table the first time and sent as one-byte indexes after that, as nghttp2 did.
///
/// Not thread-safe: one per connection, used on its event loop. Blocks must be sent in the
/// order they are encoded (the server's decoder replays the same table changes).
struct HPACKEncoder {
    /// Where one dynamic table entry's name and value lie in `arena` (the value right after the
    /// name).
    struct Entry {
        var start: Int
        var nameLength: Int
        var valueLength: Int
        /// The size HPACK counts for the entry.
        var size: Int { nameLength + valueLength + 32 }
    }

    /// Our dynamic table, mirroring the server's decoder: entries oldest first, their bytes in
    /// one arena (no array per entry to retain while searching).
    private var entries: [Entry] = []
    private var arena: [UInt8] = []
    private var entryBytes = 0
    /// The table's size limit: the server's SETTINGS_HEADER_TABLE_SIZE, at most 4,096.
    private(set) var maximumTableSize = HPACKEncoder.defaultTableSize
    /// Size updates the next block must start with (the smallest, then the final one).
    private var pendingSizeUpdates: (smallest: Int, final: Int)?
    /// Static table indexes of names written as `StaticString`s, by the literal's address: found
    /// once per name, not looked up per request.
    private var staticNameIndexes: [(address: UInt, index: Int)] = []

    static let defaultTableSize = 4096

    /// The server's SETTINGS_HEADER_TABLE_SIZE arrived: the table shrinks to it (it never grows
    /// past 4,096, the size both sides start with) and the next block says so.
    mutating func setPeerTableSize(_ size: Int) {
        let size = min(size, Self.defaultTableSize)
        guard size != maximumTableSize else { return }
        maximumTableSize = size
        evict(toFit: 0)
        if let pending = pendingSizeUpdates {
            pendingSizeUpdates = (min(pending.smallest, size), size)
        } else {
            pendingSizeUpdates = (size, size)
        }
    }

    /// Appends the HPACK encoding of `block`'s fields, in order, to `output`.
    mutating func encode(_ block: borrowing HTTP2HeaderBlock, into output: inout [UInt8]) {
        if let updates = pendingSizeUpdates {
            Self.appendInteger(updates.smallest, prefixBits: 5, firstByte: 0x20, to: &output)
            if updates.final != updates.smallest {
                Self.appendInteger(updates.final, prefixBits: 5, firstByte: 0x20, to: &output)
            }
            pendingSizeUpdates = nil
        }
        block.bytes.withUnsafeBytes { storage in
            for field in block.fields {
                let name =
                    field.staticNameAddress != 0
                    ? UnsafeRawBufferPointer(
                        start: UnsafeRawPointer(bitPattern: field.staticNameAddress), count: Int(field.nameLength))
                    : UnsafeRawBufferPointer(
                        rebasing: storage[Int(field.nameStart)..<Int(field.nameStart + field.nameLength)])
                let value = UnsafeRawBufferPointer(
                    rebasing: storage[Int(field.valueStart)..<Int(field.valueStart + field.valueLength)])
                encodeField(
                    name: name, staticNameAddress: field.staticNameAddress, value: value,
                    neverIndexed: field.neverIndexed, into: &output)
            }
        }
    }

    private mutating func encodeField(
        name: UnsafeRawBufferPointer, staticNameAddress: UInt, value: UnsafeRawBufferPointer, neverIndexed: Bool,
        into output: inout [UInt8]
    ) {
        let staticName = staticNameIndex(name, address: staticNameAddress)
        if neverIndexed {
            // Literal never indexed (0001xxxx): the name by index when either table has it.
            let nameIndex = staticName ?? dynamicIndex(name: name, value: nil) ?? 0
            Self.appendInteger(nameIndex, prefixBits: 4, firstByte: 0x10, to: &output)
            if nameIndex == 0 { Self.appendString(name, to: &output) }
            Self.appendString(value, to: &output)
            return
        }
        if let staticName, let full = HPACKStaticTable.fullMatch(nameIndex: staticName, value: value) {
            Self.appendInteger(full, prefixBits: 7, firstByte: 0x80, to: &output)
            return
        }
        if let index = dynamicIndex(name: name, value: value) {
            Self.appendInteger(index, prefixBits: 7, firstByte: 0x80, to: &output)
            return
        }
        let entrySize = name.count + value.count + 32
        if entrySize > maximumTableSize * 3 / 4 {
            // Too large to be worth a place (it would push out everything else): without
            // indexing (0000xxxx).
            let nameIndex = staticName ?? dynamicIndex(name: name, value: nil) ?? 0
            Self.appendInteger(nameIndex, prefixBits: 4, firstByte: 0x00, to: &output)
            if nameIndex == 0 { Self.appendString(name, to: &output) }
            Self.appendString(value, to: &output)
            return
        }
        // Literal with incremental indexing (01xxxxxx), then the entry is ours too.
        let nameIndex = staticName ?? dynamicIndex(name: name, value: nil) ?? 0
        Self.appendInteger(nameIndex, prefixBits: 6, firstByte: 0x40, to: &output)
        if nameIndex == 0 { Self.appendString(name, to: &output) }
        Self.appendString(value, to: &output)
        evict(toFit: entrySize)
        entries.append(Entry(start: arena.count, nameLength: name.count, valueLength: value.count))
        arena.append(contentsOf: name)
        arena.append(contentsOf: value)
        entryBytes += entrySize
    }

    /// The static table index of `name`, remembered by address for a literal name.
    private mutating func staticNameIndex(_ name: UnsafeRawBufferPointer, address: UInt) -> Int? {
        guard address != 0 else { return HPACKStaticTable.nameIndex(name) }
        for known in staticNameIndexes where known.address == address { return known.index == 0 ? nil : known.index }
        let index = HPACKStaticTable.nameIndex(name)
        staticNameIndexes.append((address, index ?? 0))
        return index
    }

    /// The HPACK index (62 and up, newest first) of a dynamic entry with this name and, unless
    /// nil, this value.
    private func dynamicIndex(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer?) -> Int? {
        guard !entries.isEmpty else { return nil }
        return arena.withUnsafeBytes { arena in
            entries.withUnsafeBufferPointer { entries in
                var position = entries.count - 1
                while position >= 0 {
                    let entry = entries[position]
                    if entry.nameLength == name.count, value == nil || entry.valueLength == value!.count,
                        HPACKStaticTable.sameBytes(
                            UnsafeRawBufferPointer(rebasing: arena[entry.start..<(entry.start + entry.nameLength)]),
                            name),
                        value.map({
                            let valueStart = entry.start + entry.nameLength
                            return HPACKStaticTable.sameBytes(
                                UnsafeRawBufferPointer(rebasing: arena[valueStart..<(valueStart + entry.valueLength)]),
                                $0)
                        }) ?? true
                    {
                        return HPACKStaticTable.count + entries.count - position
                    }
                    position -= 1
                }
                return nil
            }
        }
    }

    private mutating func evict(toFit size: Int) {
        var removed = 0
        while removed < entries.count, entryBytes + size > maximumTableSize {
            entryBytes -= entries[removed].size
            removed += 1
        }
        guard removed > 0 else { return }
        entries.removeFirst(removed)
        // The arena keeps only what the remaining entries use.
        let firstKept = entries.first?.start ?? arena.count
        arena.removeFirst(firstKept)
        for index in entries.indices { entries[index].start -= firstKept }
        if entries.isEmpty { entryBytes = 0 }
    }

    /// An HPACK integer (RFC 7541 §5.1) in a byte whose high bits are `firstByte`'s.
    @inline(__always)
    static func appendInteger(_ value: Int, prefixBits: Int, firstByte: UInt8, to output: inout [UInt8]) {
        let limit = (1 << prefixBits) - 1
        if value < limit {
            output.append(firstByte | UInt8(value))
            return
        }
        output.append(firstByte | UInt8(limit))
        var rest = value - limit
        while rest >= 128 {
            output.append(UInt8(rest & 0x7f) | 0x80)
            rest >>= 7
        }
        output.append(UInt8(rest))
    }

    /// A string literal (RFC 7541 §5.2), not Huffman-coded.
    @inline(__always)
    static func appendString(_ bytes: UnsafeRawBufferPointer, to output: inout [UInt8]) {
        appendInteger(bytes.count, prefixBits: 7, firstByte: 0, to: &output)
        output.append(contentsOf: bytes)
    }
}

extension UnsafeRawBufferPointer {
    /// Whether these bytes are exactly `literal`'s.
    @inline(__always)
    fileprivate func matches(_ literal: StaticString) -> Bool {
        count == literal.utf8CodeUnitCount
            && HPACKStaticTable.sameBytes(self, UnsafeRawBufferPointer(start: literal.utf8Start, count: count))
    }
}

/// RFC 7541's static table (Appendix A).
enum HPACKStaticTable {
    static let entries: [(name: String, value: String)] = [
        (":authority", ""), (":method", "GET"), (":method", "POST"), (":path", "/"), (":path", "/index.html"),
        (":scheme", "http"), (":scheme", "https"), (":status", "200"), (":status", "204"), (":status", "206"),
        (":status", "304"), (":status", "400"), (":status", "404"), (":status", "500"), ("accept-charset", ""),
        ("accept-encoding", "gzip, deflate"), ("accept-language", ""), ("accept-ranges", ""), ("accept", ""),
        ("access-control-allow-origin", ""), ("age", ""), ("allow", ""), ("authorization", ""),
        ("cache-control", ""), ("content-disposition", ""), ("content-encoding", ""), ("content-language", ""),
        ("content-length", ""), ("content-location", ""), ("content-range", ""), ("content-type", ""),
        ("cookie", ""), ("date", ""), ("etag", ""), ("expect", ""), ("expires", ""), ("from", ""), ("host", ""),
        ("if-match", ""), ("if-modified-since", ""), ("if-none-match", ""), ("if-range", ""),
        ("if-unmodified-since", ""), ("last-modified", ""), ("link", ""), ("location", ""), ("max-forwards", ""),
        ("proxy-authenticate", ""), ("proxy-authorization", ""), ("range", ""), ("referer", ""), ("refresh", ""),
        ("retry-after", ""), ("server", ""), ("set-cookie", ""), ("strict-transport-security", ""),
        ("transfer-encoding", ""), ("user-agent", ""), ("vary", ""), ("via", ""), ("www-authenticate", ""),
    ]
    static var count: Int { entries.count }

    /// Whether two buffers of the same length hold the same bytes.
    @inline(__always)
    static func sameBytes(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        a.count == 0 || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0
    }

    /// Each entry's name and value as bytes, for comparing with a field's.
    private static let byteEntries: [(name: [UInt8], value: [UInt8])] = entries.map {
        (Array($0.name.utf8), Array($0.value.utf8))
    }

    /// The first index (1-based) whose name is `name`.
    static func nameIndex(_ name: UnsafeRawBufferPointer) -> Int? {
        for (offset, entry) in byteEntries.enumerated()
        where entry.name.count == name.count && entry.name.withUnsafeBytes({ sameBytes($0, name) }) {
            return offset + 1
        }
        return nil
    }

    /// The index of the entry with the name at `nameIndex` and exactly `value`, if the table has
    /// one (the entries above that have values, compared without reading the table).
    static func fullMatch(nameIndex: Int, value: UnsafeRawBufferPointer) -> Int? {
        switch nameIndex {
        case 2:
            if value.matches("POST") { return 3 }
            if value.matches("GET") { return 2 }
        case 4:
            if value.matches("/") { return 4 }
            if value.matches("/index.html") { return 5 }
        case 6:
            if value.matches("https") { return 7 }
            if value.matches("http") { return 6 }
        case 8:
            for (offset, status) in ["200", "204", "206", "304", "400", "404", "500"].enumerated()
            where value.count == 3 && value.elementsEqual(status.utf8) {
                return 8 + offset
            }
        case 16:
            if value.matches("gzip, deflate") { return 16 }
        default:
            break
        }
        return nil
    }
}
