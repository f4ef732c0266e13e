import CNGHTTP2

/// nghttp2's HPACK decoder on its own (its public `nghttp2_hd_inflate_*` API), for the client
/// session, which frames HTTP/2 itself but leaves decoding — Huffman codes and the dynamic
/// table a server fills — to the library servers are tested against.
///
/// Not thread-safe: one per connection, used on its event loop.
final class NGHTTP2HeaderDecoder {
    /// The inflater, created in `init` and deleted in `deinit`; never leaves this class.
    private let inflater: OpaquePointer
    /// The inflater's memory (the decoded strings); released after the inflater is deleted.
    private let memory = NGHTTP2MemoryPool()
    /// The allocator the inflater calls. Unlike a session, an inflater keeps the pointer it is
    /// given rather than a copy, so the struct lives on the heap from `init` until `deinit`,
    /// after the inflater is deleted.
    private let allocator: UnsafeMutablePointer<nghttp2_mem>

    init() throws {
        allocator = .allocate(capacity: 1)
        allocator.initialize(to: memory.allocator)
        var created: OpaquePointer?
        let result = nghttp2_hd_inflate_new2(&created, allocator)
        guard result == 0, let created else {
            allocator.deallocate()
            throw NGHTTP2LibraryError(operation: "hd_inflate_new", code: Int(result))
        }
        inflater = created
    }

    deinit {
        nghttp2_hd_inflate_del(inflater)
        allocator.deallocate()
    }

    /// Decodes one complete header block, calling `field` with each field's name and value
    /// (valid only during the call) in order.
    /// - Throws: ``NGHTTP2LibraryError`` when the block is not valid HPACK (a connection error:
    ///   the table can no longer be trusted).
    func decode(
        _ block: UnsafeRawBufferPointer,
        field: (_ name: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) -> Void
    ) throws {
        guard var next = block.baseAddress?.assumingMemoryBound(to: UInt8.self) else {
            // An empty block is valid and has no fields.
            nghttp2_hd_inflate_end_headers(inflater)
            return
        }
        var remaining = block.count
        while true {
            var pair = nghttp2_nv()
            var flags: Int32 = 0
            let consumed = nghttp2_hd_inflate_hd2(inflater, &pair, &flags, next, remaining, 1)
            if consumed < 0 { throw NGHTTP2LibraryError(operation: "hd_inflate", code: consumed) }
            next += consumed
            remaining -= consumed
            if flags & Int32(NGHTTP2_HD_INFLATE_EMIT.rawValue) != 0 {
                field(
                    UnsafeRawBufferPointer(start: pair.name, count: pair.namelen),
                    UnsafeRawBufferPointer(start: pair.value, count: pair.valuelen))
            }
            if flags & Int32(NGHTTP2_HD_INFLATE_FINAL.rawValue) != 0 {
                nghttp2_hd_inflate_end_headers(inflater)
                return
            }
            if flags & Int32(NGHTTP2_HD_INFLATE_EMIT.rawValue) == 0 && remaining == 0 {
                throw NGHTTP2LibraryError(operation: "hd_inflate", code: Int(NGHTTP2_ERR_HEADER_COMP.rawValue))
            }
        }
    }
}
