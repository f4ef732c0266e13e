import Testing

@testable import HeraldAPI

/// A token prefix as a range of the (app_id, token) index.
@Suite("device look-up by token prefix")
struct TokenPrefixTests {
    @Test("even and odd numbers of digits, carries, and the top of the range")
    func ranges() {
        #expect(TokenPrefix(hexadecimal: "ab12") == TokenPrefix(lower: [0xab, 0x12], upper: [0xab, 0x13]))
        #expect(TokenPrefix(hexadecimal: "ABC1f") == TokenPrefix(lower: [0xab, 0xc1, 0xf0], upper: [0xab, 0xc2]))
        #expect(TokenPrefix(hexadecimal: "12ff") == TokenPrefix(lower: [0x12, 0xff], upper: [0x13]))
        #expect(TokenPrefix(hexadecimal: "ffff") == TokenPrefix(lower: [0xff, 0xff], upper: nil))
        #expect(TokenPrefix(hexadecimal: "abc") == nil, "at least 4 digits")
        #expect(TokenPrefix(hexadecimal: "abcg") == nil)
    }
}
