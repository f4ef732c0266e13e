import CNGHTTP2

/// One header field to send.
public struct HTTP2HeaderField: Sendable, Hashable {
    /// The lower-case field name (HTTP/2 requires lower case), pseudo-headers included (`:path`).
    public let name: String
    public let value: String
    /// Sent as "never indexed" so that HPACK keeps it out of both sides' dynamic tables: for
    /// values new on every message (Apple asks it of `:path` and `apns-id`), which would only
    /// push the shared fields out, and for secrets. `authorization` is always never indexed,
    /// whatever the caller says (Apple asks it of provider tokens).
    public let neverIndexed: Bool

    public init(_ name: String, _ value: String, neverIndexed: Bool = false) {
        self.name = name
        self.value = value
        var utf8 = name
        self.neverIndexed =
            neverIndexed || utf8.withUTF8 { Self.isAlwaysNeverIndexed(name: UnsafeRawBufferPointer($0)) }
    }

    /// Whether a field called `name` is sent never indexed whatever the caller asks: only
    /// `authorization` (Apple asks it of provider tokens, and a secret has no place in a table).
    /// Every request's `authorization` passes here: two word comparisons, not a byte walk.
    static func isAlwaysNeverIndexed(name: UnsafeRawBufferPointer) -> Bool {
        HTTP2FieldName.matches(name, "authorization")
    }
}

/// Comparing a field name in memory with a literal name, as whole words rather than byte by byte.
enum HTTP2FieldName {
    /// Whether `name` holds exactly the bytes of `literal` (4 to 16 bytes long): the first and
    /// the last word of each, which overlap for names shorter than two words.
    static func matches(_ name: UnsafeRawBufferPointer, _ literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        precondition(literal.hasPointerRepresentation && (4...16).contains(count), "a 4- to 16-byte literal name")
        guard name.count == count else { return false }
        let expected = UnsafeRawBufferPointer(start: literal.utf8Start, count: count)
        if count >= 8 {
            return name.loadUnaligned(as: UInt64.self) == expected.loadUnaligned(as: UInt64.self)
                && name.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
                    == expected.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
        }
        return name.loadUnaligned(as: UInt32.self) == expected.loadUnaligned(as: UInt32.self)
            && name.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)
                == expected.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)
    }
}

/// A header field's value that writes its own bytes into a header block: a String's, or digits
/// made straight from other bytes (a device token's hex, an id derived per message) so that no
/// String is made for a value used once.
public protocol HTTP2HeaderValue {
    /// Appends the value's bytes to `storage`.
    func append(to storage: inout [UInt8])
}

extension String: HTTP2HeaderValue {
    /// Appends the bytes read in place (a String's contiguous storage, without the retain and
    /// release of going through its `UTF8View` as a sequence).
    public func append(to storage: inout [UInt8]) {
        let appended = utf8.withContiguousStorageIfAvailable { storage.append(contentsOf: $0) }
        if appended == nil { storage.append(contentsOf: utf8) }
    }
}

/// Zeros that make room for a value written in place (up to a 100-byte token's 200 hex digits).
private let placeholderZeros = [UInt8](repeating: 0, count: 256)

extension HTTP2HeaderValue {
    /// Appends `count` bytes to `storage` that `write` puts in place (it must write every one of
    /// them): for values that make their bytes rather than copy them.
    public static func append(
        _ count: Int, to storage: inout [UInt8], writing write: (UnsafeMutableBufferPointer<UInt8>) -> Void
    ) {
        let start = storage.count
        // Room made by copying zeros from a buffer (a plain copy) rather than from a
        // `repeatElement` sequence, which is appended element by element.
        if count <= placeholderZeros.count {
            storage.append(contentsOf: placeholderZeros[..<count])
        } else {
            storage.append(contentsOf: repeatElement(0, count: count))
        }
        storage.withUnsafeMutableBufferPointer { storage in
            write(UnsafeMutableBufferPointer(rebasing: storage[start..<(start + count)]))
        }
    }
}

/// The header block of one outgoing request or response, written field by field — pseudo-headers
/// first — into storage a connection keeps and reuses from one message to the next, so that
/// sending a block makes no String, array or field value per message.
///
/// A connection gives its block, emptied, to whoever composes the next message (see
/// ``HTTP2ClientConnection/submit(_:timeout:compose:onResponse:)``). The client encodes it at
/// once (``HPACKEncoder``, in ``HTTP2ClientSession``); apns-sim's server side hands it to nghttp2,
/// which copies the bytes while the response is submitted. Either way nothing written here
/// outlives that call (a request waiting for the server's stream limit keeps a copy).
public struct HTTP2HeaderBlock: Sendable {
    /// Where a field's name and value lie in `bytes` (or, for a name given as a `StaticString`,
    /// the address of the name's constant bytes), and its HPACK flags.
    struct Field: Sendable {
        var nameStart: Int32
        var nameLength: Int32
        var valueStart: Int32
        var valueLength: Int32
        var neverIndexed: Bool
        /// The address of a static name's bytes (0 when the name is in `bytes`): constant for the
        /// program's life, so nghttp2 is told not to copy it.
        var staticNameAddress: UInt = 0
    }

    var bytes: [UInt8] = []
    var fields: [Field] = []

    public init() {}

    /// Writes the four pseudo-header fields that start a request. `:path` is `pathPrefix`
    /// followed by `path` (a prefix shared by every request, such as APNs' `/3/device/`, is then
    /// never joined into a new String per request).
    public mutating func addRequestPseudoHeaders(
        method: String, scheme: String, authority: String, pathPrefix: StaticString = "",
        path: some HTTP2HeaderValue, pathNeverIndexed: Bool
    ) {
        add(":method", method)
        add(":scheme", scheme)
        add(":authority", authority)
        add(":path", pathPrefix, path, neverIndexed: pathNeverIndexed)
    }

    /// Writes one field. `authorization` is always never indexed (see ``HTTP2HeaderField``).
    public mutating func add(_ name: StaticString, _ value: String, neverIndexed: Bool = false) {
        add(name, "", value, neverIndexed: neverIndexed)
    }

    /// Writes one field whose value is `valuePrefix` followed by `value`, which writes itself
    /// into the block's storage (a String's bytes, or digits made straight from other bytes).
    public mutating func add(
        _ name: StaticString, _ valuePrefix: StaticString, _ value: some HTTP2HeaderValue, neverIndexed: Bool
    ) {
        // A literal's bytes are constant and live as long as the program: nghttp2 takes them as
        // they are, and the client's encoder finds its static-table index once per literal
        // (HTTP/2 names are lower case, and every name Herald writes is).
        let staticName = name.hasPointerRepresentation ? UInt(bitPattern: name.utf8Start) : 0
        let nameStart = bytes.count
        if staticName == 0 { name.withUTF8Buffer { bytes.append(contentsOf: $0) } }
        let valueStart = bytes.count
        if valuePrefix.utf8CodeUnitCount > 0 { valuePrefix.withUTF8Buffer { bytes.append(contentsOf: $0) } }
        value.append(to: &bytes)
        let secret = name.withUTF8Buffer { HTTP2HeaderField.isAlwaysNeverIndexed(name: UnsafeRawBufferPointer($0)) }
        record(
            nameStart: nameStart, nameLength: staticName == 0 ? valueStart - nameStart : name.utf8CodeUnitCount,
            staticNameAddress: staticName, valueStart: valueStart, neverIndexed: neverIndexed || secret)
    }

    /// Writes `field` as it is.
    public mutating func add(_ field: HTTP2HeaderField) {
        let nameStart = bytes.count
        field.name.append(to: &bytes)
        let valueStart = bytes.count
        field.value.append(to: &bytes)
        record(
            nameStart: nameStart, nameLength: valueStart - nameStart, staticNameAddress: 0, valueStart: valueStart,
            neverIndexed: field.neverIndexed)
    }

    /// Writes each of `fields`, in order.
    public mutating func add(contentsOf fields: [HTTP2HeaderField]) {
        for field in fields { add(field) }
    }

    /// Writes every field of `other`, in order: fields shared by many messages, written into a
    /// block of their own once and copied from it as bytes (no String read per field).
    public mutating func add(contentsOf other: HTTP2HeaderBlock) {
        if fields.isEmpty {
            bytes.reserveCapacity(512)
            fields.reserveCapacity(16)
        }
        let offset = Int32(bytes.count)
        bytes.append(contentsOf: other.bytes)
        for var field in other.fields {
            field.nameStart += offset  // unused for a static name
            field.valueStart += offset
            fields.append(field)
        }
    }

    /// Records the field whose value was just written, from `valueStart` to the end of `bytes`.
    private mutating func record(
        nameStart: Int, nameLength: Int, staticNameAddress: UInt, valueStart: Int, neverIndexed: Bool
    ) {
        if fields.isEmpty {
            bytes.reserveCapacity(512)
            fields.reserveCapacity(16)
        }
        fields.append(
            Field(
                nameStart: Int32(nameStart), nameLength: Int32(nameLength), valueStart: Int32(valueStart),
                valueLength: Int32(bytes.count - valueStart), neverIndexed: neverIndexed,
                staticNameAddress: staticNameAddress))
    }

    /// Empties the block, keeping its storage for the next message.
    mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        fields.removeAll(keepingCapacity: true)
    }

    /// Calls `body` with nghttp2 name/value pairs pointing into the block's bytes. nghttp2 copies
    /// values (and names other than literals) during `submit_*`, so those pointers only have to
    /// live for the call, and they never leave it. A name written from a `StaticString` points
    /// at the literal itself, with `NO_COPY_NAME`: it lives as long as the program, and nghttp2
    /// neither copies nor lower-cases it (saving both for every field of every request).
    func withNameValuePairs<Result>(_ body: (UnsafePointer<nghttp2_nv>, Int) -> Result) -> Result {
        bytes.withUnsafeBufferPointer { storage in
            withUnsafeTemporaryAllocation(of: nghttp2_nv.self, capacity: max(fields.count, 1)) { pairs in
                // No bytes, nothing to point into: nghttp2 is given no pair. (`nghttp2_nv` is a
                // plain C struct: the pairs need no deinitializing.)
                guard let base = storage.baseAddress else { return body(UnsafePointer(pairs.baseAddress!), 0) }
                let start = UnsafeMutablePointer(mutating: base)
                for (index, field) in fields.enumerated() {
                    var flags = field.neverIndexed ? NGHTTP2_NV_FLAG_NO_INDEX.rawValue : NGHTTP2_NV_FLAG_NONE.rawValue
                    var name = start + Int(field.nameStart)
                    if let staticName = UnsafeMutablePointer<UInt8>(bitPattern: field.staticNameAddress) {
                        name = staticName
                        flags |= NGHTTP2_NV_FLAG_NO_COPY_NAME.rawValue
                    }
                    pairs.initializeElement(
                        at: index,
                        to: nghttp2_nv(
                            name: name, value: start + Int(field.valueStart), namelen: Int(field.nameLength),
                            valuelen: Int(field.valueLength), flags: UInt8(flags)))
                }
                return body(UnsafePointer(pairs.baseAddress!), fields.count)
            }
        }
    }
}

/// The header fields of a received request or response, in arrival order, pseudo-headers
/// included. Stored as one byte array and a list of offsets: two allocations per message
/// however many fields it has.
public struct HTTP2HeaderFields: Sendable {
    @usableFromInline struct Entry: Sendable {
        var nameStart: Int32
        var nameLength: Int32
        var valueStart: Int32
        var valueLength: Int32
    }

    @usableFromInline var bytes: [UInt8] = []
    @usableFromInline var entries: [Entry] = []

    public init() {}

    public init(_ fields: [(String, String)]) {
        self.init()
        for (name, value) in fields { append(name: Array(name.utf8), value: Array(value.utf8)) }
    }

    mutating func append(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        if entries.isEmpty {
            bytes.reserveCapacity(256)
            entries.reserveCapacity(12)
        }
        let nameStart = Int32(bytes.count)
        bytes.append(contentsOf: name)
        let valueStart = Int32(bytes.count)
        bytes.append(contentsOf: value)
        entries.append(
            Entry(
                nameStart: nameStart, nameLength: Int32(name.count),
                valueStart: valueStart, valueLength: Int32(value.count)))
    }

    /// Empties the fields, keeping the storage when this is its only owner (the server reuses
    /// header storage from one request to the next).
    mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        entries.removeAll(keepingCapacity: true)
    }

    mutating func append(name: [UInt8], value: [UInt8]) {
        name.withUnsafeBytes { n in value.withUnsafeBytes { v in append(name: n, value: v) } }
    }

    /// How many fields there are.
    public var count: Int { entries.count }

    /// The total size of names and values in bytes.
    public var byteCount: Int { bytes.count }

    /// The value of the first field called `name` (lower case), or nil.
    public subscript(_ name: String) -> String? {
        guard let index = firstIndex(of: name) else { return nil }
        return value(at: index)
    }

    /// How many fields are called `name`.
    public func count(of name: String) -> Int {
        var found = 0
        for index in entries.indices where nameEquals(index, name) { found += 1 }
        return found
    }

    /// Whether any field name appears more than once.
    public var hasDuplicateNames: Bool {
        for i in entries.indices {
            for j in entries.index(after: i)..<entries.endIndex where namesEqual(i, j) { return true }
        }
        return false
    }

    /// Calls `body` with the raw bytes of the first value of `name`, without making a String.
    public func withValueBytes<Result>(of name: String, _ body: (UnsafeRawBufferPointer?) throws -> Result) rethrows
        -> Result
    {
        guard let index = firstIndex(of: name) else { return try body(nil) }
        let entry = entries[index]
        return try bytes.withUnsafeBytes { all in
            try body(
                UnsafeRawBufferPointer(rebasing: all[Int(entry.valueStart)..<Int(entry.valueStart + entry.valueLength)])
            )
        }
    }

    /// Calls `body` with each field's raw name and value, in order, without making Strings.
    /// The buffers are valid only during the call.
    public func forEachField(_ body: (_ name: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Void)
        rethrows
    {
        try bytes.withUnsafeBytes { all in
            for entry in entries {
                try body(
                    UnsafeRawBufferPointer(
                        rebasing: all[Int(entry.nameStart)..<Int(entry.nameStart + entry.nameLength)]),
                    UnsafeRawBufferPointer(
                        rebasing: all[Int(entry.valueStart)..<Int(entry.valueStart + entry.valueLength)]))
            }
        }
    }

    /// Every field as name and value strings.
    public var fields: [(name: String, value: String)] {
        entries.indices.map { (name(at: $0), value(at: $0)) }
    }

    func firstIndex(of name: String) -> Int? {
        entries.indices.first { nameEquals($0, name) }
    }

    func name(at index: Int) -> String {
        let entry = entries[index]
        return String(decoding: bytes[Int(entry.nameStart)..<Int(entry.nameStart + entry.nameLength)], as: UTF8.self)
    }

    func value(at index: Int) -> String {
        let entry = entries[index]
        return String(decoding: bytes[Int(entry.valueStart)..<Int(entry.valueStart + entry.valueLength)], as: UTF8.self)
    }

    private func nameEquals(_ index: Int, _ name: String) -> Bool {
        let entry = entries[index]
        guard entry.nameLength == name.utf8.count else { return false }
        var position = Int(entry.nameStart)
        for byte in name.utf8 {
            if bytes[position] != byte { return false }
            position += 1
        }
        return true
    }

    private func namesEqual(_ i: Int, _ j: Int) -> Bool {
        let a = entries[i]
        let b = entries[j]
        guard a.nameLength == b.nameLength else { return false }
        for k in 0..<Int(a.nameLength) where bytes[Int(a.nameStart) + k] != bytes[Int(b.nameStart) + k] { return false }
        return true
    }
}
