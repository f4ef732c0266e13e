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
        self.neverIndexed = neverIndexed || name == "authorization"
    }
}

/// The header fields of an outgoing request or response, pseudo-headers first.
struct HTTP2OutgoingHeaders {
    /// Fields sent before `fields` (a response's `:status`, a request's pseudo-headers), kept
    /// apart so that the caller's array is used as it is, not copied into a new one.
    var leading: LeadingFields
    var fields: [HTTP2HeaderField]
    /// A field sent after `fields`.
    var last: HTTP2HeaderField?

    /// Up to four leading fields, stored inline (no allocation).
    struct LeadingFields {
        var count = 0
        var first, second, third, fourth: HTTP2HeaderField?

        init() {}

        mutating func append(_ field: HTTP2HeaderField) {
            switch count {
            case 0: first = field
            case 1: second = field
            case 2: third = field
            default: fourth = field
            }
            count = min(count + 1, 4)
        }

        /// Calls `body` with each field, in order (an inline store, not a `Sequence`).
        func visit(_ body: (HTTP2HeaderField) -> Void) {
            if let first { body(first) }
            if let second { body(second) }
            if let third { body(third) }
            if let fourth { body(fourth) }
        }
    }

    init(leading: HTTP2HeaderField? = nil, fields: [HTTP2HeaderField]) {
        self.leading = LeadingFields()
        if let leading { self.leading.append(leading) }
        self.fields = fields
    }

    init(leading: LeadingFields, fields: [HTTP2HeaderField], last: HTTP2HeaderField?) {
        self.leading = leading
        self.fields = fields
        self.last = last
    }

    /// Calls `body` with nghttp2 name/value pairs pointing into temporary storage. nghttp2 copies
    /// names and values during `submit_*` (no `NO_COPY` flags are set), so the storage only has
    /// to live for the call, and the pointers never leave it.
    func withNameValuePairs<Result>(_ body: (UnsafePointer<nghttp2_nv>, Int) -> Result) -> Result {
        var byteCount = 0
        leading.visit { byteCount += $0.name.utf8.count + $0.value.utf8.count }
        for field in fields { byteCount += field.name.utf8.count + field.value.utf8.count }
        if let last { byteCount += last.name.utf8.count + last.value.utf8.count }
        let count = fields.count + leading.count + (last == nil ? 0 : 1)
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: max(byteCount, 1)) { bytes in
            withUnsafeTemporaryAllocation(of: nghttp2_nv.self, capacity: max(count, 1)) { pairs in
                var offset = 0
                var index = 0
                func copy(_ text: String) {
                    var text = text
                    text.withUTF8 { utf8 in
                        if let source = utf8.baseAddress {
                            (bytes.baseAddress! + offset).initialize(from: source, count: utf8.count)
                        }
                        offset += utf8.count
                    }
                }
                func add(_ field: HTTP2HeaderField) {
                    let nameStart = offset
                    copy(field.name)
                    let valueStart = offset
                    copy(field.value)
                    let flags = field.neverIndexed ? NGHTTP2_NV_FLAG_NO_INDEX.rawValue : NGHTTP2_NV_FLAG_NONE.rawValue
                    pairs.initializeElement(
                        at: index,
                        to: nghttp2_nv(
                            name: bytes.baseAddress! + nameStart, value: bytes.baseAddress! + valueStart,
                            namelen: valueStart - nameStart, valuelen: offset - valueStart, flags: UInt8(flags)))
                    index += 1
                }
                leading.visit { add($0) }
                for field in fields { add(field) }
                if let last { add(last) }
                defer { pairs.baseAddress!.deinitialize(count: count) }
                return body(UnsafePointer(pairs.baseAddress!), count)
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
