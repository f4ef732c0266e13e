import Foundation
import HeraldCore
import Testing

/// `UUID.random()` makes the UUIDs Foundation's `UUID()` makes: version 4, RFC 4122 variant,
/// different every time.
@Suite struct RandomUUIDTests {
    @Test func randomUUIDsAreVersionFourAndDistinct() {
        let uuids = (0..<1_000).map { _ in UUID.random() }
        #expect(Set(uuids).count == uuids.count)
        for uuid in uuids {
            #expect(uuid.uuid.6 >> 4 == 4, "\(uuid)")
            #expect(uuid.uuid.8 >> 6 == 0b10, "\(uuid)")
            // The text form parses back to the same UUID, as Foundation's own would.
            #expect(UUID(uuidString: uuid.uuidString) == uuid)
            #expect(Array(uuid.uuidString)[14] == "4")
        }
        // Not the same byte everywhere: the bits outside version and variant are drawn.
        let first = uuids.map(\.uuid.0)
        #expect(Set(first).count > 100)
    }
}
