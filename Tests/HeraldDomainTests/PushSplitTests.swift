import Foundation
import HeraldDomain
import Testing

@Suite("A/B test split")
struct PushSplitTests {
    @Test("100,000 devices split within a point of the weights and the holdout")
    func splitFollowsTheWeights() {
        let split = PushSplit(
            variants: [.init(name: "a", weight: 50), .init(name: "b", weight: 30), .init(name: "c", weight: 20)],
            holdout: 0.1)
        let push = UUID()
        var counts = [Int](repeating: 0, count: 3)
        var heldOut = 0
        let base = Int64.random(in: 1...1_000_000_000)
        for device in base..<(base + 100_000) {
            if let variant = split.variant(pushID: push, deviceID: device) {
                counts[variant] += 1
            } else {
                heldOut += 1
            }
        }
        #expect(abs(Double(heldOut) / 100_000 - 0.1) < 0.01)
        for (index, share) in [0.45, 0.27, 0.18].enumerated() {
            #expect(abs(Double(counts[index]) / 100_000 - share) < 0.01, "\(counts)")
        }
    }

    @Test("the same device gets the same variant of a push, and other pushes mix devices anew")
    func assignmentIsStable() {
        let split = PushSplit(variants: [.init(name: "a", weight: 1), .init(name: "b", weight: 1)])
        let push = UUID(uuidString: "6B3F0E0C-1D2A-4C5B-9E8F-0A1B2C3D4E5F")!
        let first = (1...1000).map { split.variant(pushID: push, deviceID: Int64($0)) }
        #expect(first == (1...1000).map { split.variant(pushID: push, deviceID: Int64($0)) })
        // Fixed values: a change of the hash would reassign the devices of running A/B tests.
        #expect(first.prefix(12).map { $0 ?? -1 } == PushSplitTests.pinned)
        let other = (1...1000).map { split.variant(pushID: UUID(), deviceID: Int64($0)) }
        let same = zip(first, other).filter { $0 == $1 }.count
        #expect((400...600).contains(same))
        #expect(!first.contains(nil))
    }

    static let pinned = [1, 0, 1, 0, 0, 1, 1, 1, 0, 0, 0, 1]

    @Test("a split is stored and read back")
    func storedForm() {
        let split = PushSplit(variants: [.init(name: "x", weight: 2), .init(name: "y", weight: 3)], holdout: 0.05)
        #expect(PushSplit(json: split.json) == split)
        #expect(PushSplit(json: nil) == nil && PushSplit(json: "not json") == nil)
    }
}
