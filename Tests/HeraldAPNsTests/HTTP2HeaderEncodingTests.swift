import Testing

@testable import HeraldHTTP2

@Suite("HPACK instructions given to nghttp2")
struct HTTP2HeaderEncodingTests {
    /// Each field's name, value and whether it goes out never-indexed (nghttp2's NO_INDEX flag,
    /// 0x01), in order.
    private func pairs(_ block: HTTP2HeaderBlock) -> [(name: String, value: String, neverIndexed: Bool)] {
        block.withNameValuePairs { pairs, count in
            UnsafeBufferPointer(start: pairs, count: count).map { pair in
                (
                    String(decoding: UnsafeBufferPointer(start: pair.name, count: pair.namelen), as: UTF8.self),
                    String(decoding: UnsafeBufferPointer(start: pair.value, count: pair.valuelen), as: UTF8.self),
                    pair.flags & 0x01 != 0
                )
            }
        }
    }

    @Test("authorization is never indexed, even when the caller did not ask; other fields as asked")
    func authorizationNeverIndexed() {
        var block = HTTP2HeaderBlock()
        block.add(HTTP2HeaderField(":path", "/3/device/abc", neverIndexed: true))
        block.add(contentsOf: [
            HTTP2HeaderField("authorization", "bearer eyJhbGciOiJFUzI1NiJ9.e30.c2ln"),
            HTTP2HeaderField("apns-topic", "com.example.app"),
        ])
        block.add("authorization", "bearer second")
        block.add("apns-id", "B7467464-A2B6-5CCE-910E-431679127746", neverIndexed: true)
        #expect(pairs(block).map(\.neverIndexed) == [true, true, false, true, true])
    }

    @Test("a request's block: pseudo-headers first, the path's prefix joined to it, storage reused")
    func requestBlock() {
        var block = HTTP2HeaderBlock()
        for token in ["ab12", "cd34"] {
            block.removeAll()
            block.addRequestPseudoHeaders(
                method: "POST", scheme: "https", authority: "api.push.apple.com", pathPrefix: "/3/device/",
                path: token, pathNeverIndexed: true)
            block.add("apns-topic", "com.example.app")
            let written = pairs(block)
            #expect(written.map(\.name) == [":method", ":scheme", ":authority", ":path", "apns-topic"])
            #expect(
                written.map(\.value) == [
                    "POST", "https", "api.push.apple.com", "/3/device/\(token)", "com.example.app",
                ])
            #expect(written.map(\.neverIndexed) == [false, false, false, true, false])
        }
        block.removeAll()
        #expect(pairs(block).isEmpty)
    }
}
