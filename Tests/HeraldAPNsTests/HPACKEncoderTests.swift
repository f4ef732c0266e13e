import Testing

@testable import HeraldHTTP2

/// The client's HPACK encoder, checked against nghttp2's decoder (the one servers are tested
/// against): every block it writes must decode to the fields it was given, with the dynamic
/// table the same on both sides however the blocks go.
@Suite("HPACK encoding of the client's requests")
struct HPACKEncoderTests {
    private func decode(_ bytes: [UInt8], with decoder: NGHTTP2HeaderDecoder) throws -> [[String]] {
        var fields: [[String]] = []
        try bytes.withUnsafeBytes { block in
            try decoder.decode(block) { name, value in
                fields.append([String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)])
            }
        }
        return fields
    }

    private func request(token: String, id: String) -> HTTP2HeaderBlock {
        var block = HTTP2HeaderBlock()
        block.addRequestPseudoHeaders(
            method: "POST", scheme: "https", authority: "api.push.apple.com", pathPrefix: "/3/device/", path: token,
            pathNeverIndexed: true)
        block.add("authorization", "bearer eyJhbGciOiJFUzI1NiJ9.e30.c2lnbmF0dXJl")
        block.add("apns-topic", "com.example.app")
        block.add("apns-push-type", "alert")
        block.add("apns-id", id, neverIndexed: true)
        return block
    }

    @Test("an APNs request decodes as written; the second one sends the shared fields as one-byte indexes")
    func apnsRequests() throws {
        var encoder = HPACKEncoder()
        let decoder = try NGHTTP2HeaderDecoder()
        var sizes: [Int] = []
        for (token, id) in [
            ("ab12cd34", "B7467464-A2B6-5CCE-910E-431679127746"), ("ef56", "C0FFEE00-0000-5000-8000-000000000001"),
        ] {
            var bytes: [UInt8] = []
            encoder.encode(request(token: token, id: id), into: &bytes)
            #expect(
                try decode(bytes, with: decoder) == [
                    [":method", "POST"], [":scheme", "https"], [":authority", "api.push.apple.com"],
                    [":path", "/3/device/\(token)"], ["authorization", "bearer eyJhbGciOiJFUzI1NiJ9.e30.c2lnbmF0dXJl"],
                    ["apns-topic", "com.example.app"], ["apns-push-type", "alert"], ["apns-id", id],
                ])
            // :method POST and :scheme https are whole entries of the static table.
            #expect(Array(bytes.prefix(2)) == [0x83, 0x87])
            // Values are sent as their plain bytes, not Huffman-coded.
            #expect(bytes.firstRange(of: Array("/3/device/\(token)".utf8)) != nil)
            #expect(bytes.firstRange(of: Array(id.utf8)) != nil)
            sizes.append(bytes.count)
        }
        // The authority, topic and push type were added to the table by the first request (20,
        // 28 and 22 bytes as literals) and are one byte each in the second; its path is 4 bytes
        // shorter.
        #expect(sizes[0] - sizes[1] == 19 + 27 + 21 + 4)
    }

    @Test("never-indexed fields (and authorization always) are sent as literals that never enter a table")
    func neverIndexed() throws {
        var encoder = HPACKEncoder()
        let decoder = try NGHTTP2HeaderDecoder()
        for _ in 0..<2 {
            var block = HTTP2HeaderBlock()
            block.add("authorization", "bearer x")
            var bytes: [UInt8] = []
            encoder.encode(block, into: &bytes)
            // 0001xxxx with the static table's index 23 ("authorization"), then the value.
            #expect(Array(bytes.prefix(3)) == [0x1f, 0x08, 0x08])
            #expect(try decode(bytes, with: decoder) == [["authorization", "bearer x"]])

            block.removeAll()
            block.add("apns-id", "same", neverIndexed: true)
            bytes.removeAll()
            encoder.encode(block, into: &bytes)
            #expect(bytes == [0x10, 0x07] + Array("apns-id".utf8) + [0x04] + Array("same".utf8))
        }
    }

    @Test(
        "blocks of many names and values, repeated and new, large and small, with the server's table size changing: both tables stay the same"
    )
    func tablesStayInStep() throws {
        var encoder = HPACKEncoder()
        let decoder = try NGHTTP2HeaderDecoder()
        // A fixed sequence (a linear congruential step, high bits used), so that a failure replays.
        var state: UInt64 = 7541
        func random(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int(state >> 33) % bound
        }
        let names = ["apns-topic", "apns-collapse-id", "x-herald", "content-type", "user-agent", "apns-expiration"]
        for step in 0..<3000 {
            switch step {
            case 1000: encoder.setPeerTableSize(256)
            case 1500: encoder.setPeerTableSize(0)
            case 1600: encoder.setPeerTableSize(65536)
            default: break
            }
            var block = HTTP2HeaderBlock()
            var expected: [[String]] = []
            for _ in 0..<(1 + random(8)) {
                let name = names[random(names.count)]
                let value =
                    random(10) == 0
                    ? String(repeating: "v", count: 500 + random(3000)) : "value-\(random(40))"
                let never = random(4) == 0
                block.add(HTTP2HeaderField(name, value, neverIndexed: never))
                expected.append([name, value])
            }
            var bytes: [UInt8] = []
            encoder.encode(block, into: &bytes)
            let decoded = try decode(bytes, with: decoder)
            #expect(decoded == expected, "step \(step)")
            if decoded != expected { return }
        }
        #expect(encoder.maximumTableSize == HPACKEncoder.defaultTableSize)
    }

    @Test("integers past their prefix take continuation bytes (RFC 7541 C.1.2)")
    func integers() {
        var bytes: [UInt8] = []
        HPACKEncoder.appendInteger(1337, prefixBits: 5, firstByte: 0, to: &bytes)
        #expect(bytes == [31, 154, 10])
        bytes.removeAll()
        HPACKEncoder.appendInteger(10, prefixBits: 5, firstByte: 0, to: &bytes)
        #expect(bytes == [10])
    }
}
