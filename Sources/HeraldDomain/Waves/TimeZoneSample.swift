/// An audience's devices by time zone estimated from a sample of them: each zone's share of the
/// sample applied to the audience's size (known from the kept device counts, or PostgreSQL's
/// estimate). The dry run of a local-time push plans its waves from it when the audience is too
/// large to group exactly within a request (docs/local-time.md).
public enum TimeZoneSample {
    /// `sampled`'s counts scaled to `total` devices, rounded by largest remainder so that they add
    /// up to `total` exactly; zones the scaling leaves with no device are dropped. An empty sample
    /// gives no groups.
    public static func scaled(
        _ sampled: [(timeZone: String, devices: Int64)], to total: Int64
    ) -> [(timeZone: String, devices: Int64)] {
        let groups = sampled.filter { $0.devices > 0 }
        let taken = groups.reduce(Int64(0)) { $0 + $1.devices }
        guard taken > 0, total > 0 else { return [] }
        // Exact in integers: zone i gets floor(total × c_i / taken), the remainders decide who
        // gets the devices left over (ties to the larger sample, then the zone's name).
        var shares: [(timeZone: String, devices: Int64, remainder: Int64, sampled: Int64)] = groups.map { group in
            let (high, low) = total.multipliedFullWidth(by: group.devices)
            let (quotient, remainder) = taken.dividingFullWidth((high, low))
            return (group.timeZone, quotient, remainder, group.devices)
        }
        var left = total - shares.reduce(Int64(0)) { $0 + $1.devices }
        let order = shares.indices.sorted { a, b in
            (shares[a].remainder, shares[a].sampled, shares[b].timeZone)
                > (shares[b].remainder, shares[b].sampled, shares[a].timeZone)
        }
        for index in order where left > 0 {
            shares[index].devices += 1
            left -= 1
        }
        return shares.filter { $0.devices > 0 }.map { (timeZone: $0.timeZone, devices: $0.devices) }
    }
}
