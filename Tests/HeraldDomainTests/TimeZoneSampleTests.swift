import HeraldDomain
import Testing

@Suite("Time zones estimated from a sample (pure logic)")
struct TimeZoneSampleTests {
    func scaled(_ sampled: [(String, Int64)], to total: Int64) -> [String: Int64] {
        var result: [String: Int64] = [:]
        for group in TimeZoneSample.scaled(sampled.map { (timeZone: $0.0, devices: $0.1) }, to: total) {
            #expect(result[group.timeZone] == nil, "each zone once")
            result[group.timeZone] = group.devices
        }
        return result
    }

    @Test("each zone's share of the sample is applied to the audience's size, and the shares add up to it exactly")
    func sharesAddUp() {
        #expect(
            scaled([("Asia/Tokyo", 50), ("Europe/Berlin", 30), ("", 20)], to: 1_000) == [
                "Asia/Tokyo": 500, "Europe/Berlin": 300, "": 200,
            ])
        // Thirds of 10: the one device left over goes to the largest remainder; all equal, to
        // the first name.
        let thirds = scaled([("A", 1), ("B", 1), ("C", 1)], to: 10)
        #expect(thirds.values.reduce(0, +) == 10)
        #expect(thirds == ["A": 4, "B": 3, "C": 3])
        let uneven = scaled([("A", 7), ("B", 11), ("C", 13), ("D", 1)], to: 9_999_999)
        #expect(uneven.values.reduce(0, +) == 9_999_999)
        // Floors leave 3 devices over; the remainders (in 32nds) are A 25, B 21, C 19, D 31.
        #expect(uneven == ["A": 2_187_500, "B": 3_437_500, "C": 4_062_499, "D": 312_500])
    }

    @Test(
        "zones the scaling leaves empty are dropped; an empty sample or audience gives nothing; no overflow at any size"
    )
    func edges() {
        #expect(scaled([("A", 1_000), ("B", 1)], to: 2) == ["A": 2])
        #expect(scaled([], to: 1_000).isEmpty)
        #expect(scaled([("A", 0)], to: 1_000).isEmpty)
        #expect(scaled([("A", 3)], to: 0).isEmpty)
        #expect(
            scaled([("A", 3_000_000_000), ("B", 1_000_000_000)], to: 4_000_000_000_000) == [
                "A": 3_000_000_000_000, "B": 1_000_000_000_000,
            ])
    }
}
