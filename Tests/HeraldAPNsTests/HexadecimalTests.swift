import Testing

@testable import HeraldAPNs

@Suite("Hexadecimal digits")
struct HexadecimalTests {
    @Test("the branch-free value agrees with the switch for every byte")
    func valueMatchesNibble() {
        for byte in UInt8.min...UInt8.max {
            if let nibble = Hexadecimal.nibble(byte) {
                #expect(Hexadecimal.value(byte) == nibble)
                #expect(Hexadecimal.isDigit(byte))
            } else {
                #expect(Hexadecimal.value(byte) > 15, "byte \(byte)")
                #expect(!Hexadecimal.isDigit(byte))
            }
        }
    }
}
