/// A Prometheus histogram: counts of observations at or under each bound, their sum and count.
///
/// A value type: keep it under the owner's lock, or fill one outside the lock and ``add(_:)`` it
/// under the lock (one lock per batch instead of one per observation).
public struct Histogram: Sendable {
    public let bounds: [Double]
    /// Observations per bucket (not cumulative); the last one holds those above every bound.
    private var counts: [Int]
    private var sum = 0.0
    private var count = 0

    public init(bounds: [Double]) {
        self.bounds = bounds
        counts = [Int](repeating: 0, count: bounds.count + 1)
    }

    public mutating func observe(_ value: Double) {
        counts[bounds.firstIndex { value <= $0 } ?? bounds.count] += 1
        sum += value
        count += 1
    }

    /// Adds the observations of `other` (same bounds).
    public mutating func add(_ other: Histogram) {
        for index in counts.indices { counts[index] += other.counts[index] }
        sum += other.sum
        count += other.count
    }

    /// Writes the histogram as the family `name`: cumulative buckets, sum and count.
    public func write(to text: inout PrometheusText, name: String, help: String) {
        text.family(name, .histogram, help: help)
        var cumulative = 0
        for (index, bound) in bounds.enumerated() {
            cumulative += counts[index]
            let label = bound == bound.rounded() && abs(bound) < 1e15 ? String(Int(bound)) : String(bound)
            text.sample(name + "_bucket", ["le": label], value: cumulative)
        }
        text.sample(name + "_bucket", ["le": "+Inf"], value: cumulative + counts[bounds.count])
        text.sample(name + "_sum", value: sum)
        text.sample(name + "_count", value: count)
    }
}
