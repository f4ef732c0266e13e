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
        writeSamples(to: &text, name: name)
    }

    /// Writes the histogram's samples under a family written before (several histograms of one
    /// family, told apart by `label`).
    public func writeSamples(to text: inout PrometheusText, name: String, label: (name: String, value: String)? = nil) {
        func sample(_ suffix: String, _ bound: String?, _ value: some Numeric) {
            switch (label, bound) {
            case (let label?, let bound?):
                text.sample(name + suffix, [label.name: label.value, "le": bound], value: value)
            case (let label?, nil): text.sample(name + suffix, [label.name: label.value], value: value)
            case (nil, let bound?): text.sample(name + suffix, ["le": bound], value: value)
            case (nil, nil): text.sample(name + suffix, value: value)
            }
        }
        var cumulative = 0
        for (index, bound) in bounds.enumerated() {
            cumulative += counts[index]
            sample(
                "_bucket", bound == bound.rounded() && abs(bound) < 1e15 ? String(Int(bound)) : String(bound),
                cumulative)
        }
        sample("_bucket", "+Inf", cumulative + counts[bounds.count])
        sample("_sum", nil, sum)
        sample("_count", nil, count)
    }
}
