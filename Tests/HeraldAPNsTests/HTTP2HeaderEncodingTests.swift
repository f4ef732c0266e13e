import Testing

@testable import HeraldHTTP2

@Suite("HPACK instructions given to nghttp2")
struct HTTP2HeaderEncodingTests {
    /// Each field's name and whether it goes out never-indexed (nghttp2's NO_INDEX flag, 0x01).
    private func neverIndexed(_ headers: HTTP2OutgoingHeaders) -> [String: Bool] {
        headers.withNameValuePairs { pairs, count in
            var result: [String: Bool] = [:]
            for pair in UnsafeBufferPointer(start: pairs, count: count) {
                let name = String(decoding: UnsafeBufferPointer(start: pair.name, count: pair.namelen), as: UTF8.self)
                result[name] = pair.flags & 0x01 != 0
            }
            return result
        }
    }

    @Test("authorization is never indexed, even when the caller did not ask; other fields as asked")
    func authorizationNeverIndexed() {
        let headers = HTTP2OutgoingHeaders(
            leading: HTTP2HeaderField(":path", "/3/device/abc", neverIndexed: true),
            fields: [
                HTTP2HeaderField("authorization", "bearer eyJhbGciOiJFUzI1NiJ9.e30.c2ln"),
                HTTP2HeaderField("apns-topic", "com.example.app"),
                HTTP2HeaderField("apns-id", "B7467464-A2B6-5CCE-910E-431679127746", neverIndexed: true),
            ])
        #expect(
            neverIndexed(headers) == [
                ":path": true, "authorization": true, "apns-topic": false, "apns-id": true,
            ])
    }
}
