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

    @Test("winner mode: a sample of the share asked for gets the variants, the rest the winner once picked")
    func winnerMode() {
        var split = PushSplit(variants: [.init(name: "a", weight: 1), .init(name: "b", weight: 1)], holdout: 0.1)
        split.sample = 0.2
        let push = UUID()
        let devices = Int64(1)...Int64(50_000)
        let sample = devices.filter { split.phase(pushID: push, deviceID: $0) == 0 }
        #expect(abs(Double(sample.count) / 50_000 - 0.2) < 0.01)
        // The sample holds both variants in their proportion, and the holdout's share.
        let inSample = sample.map { split.variant(pushID: push, deviceID: $0) }
        #expect(abs(Double(inSample.filter { $0 == nil }.count) / Double(sample.count) - 0.1) < 0.02)
        #expect(abs(Double(inSample.filter { $0 == 0 }.count) / Double(sample.count) - 0.45) < 0.02)
        // Before the pick the rest gets nothing; after it, the winner (the held out still nothing).
        let rest = devices.filter { split.phase(pushID: push, deviceID: $0) == 1 }
        #expect(rest.allSatisfy { split.variant(pushID: push, deviceID: $0) == nil })
        split.winner = 1
        let picked = rest.map { split.variant(pushID: push, deviceID: $0) }
        #expect(Set(picked) == [nil, 1])
        #expect(abs(Double(picked.filter { $0 == nil }.count) / Double(rest.count) - 0.1) < 0.01)
        split.secondPhaseFrom = 7
        #expect(split.phase(ofBatch: 6) == 0 && split.phase(ofBatch: 7) == 1)
    }

    @Test("the winner is the best open rate; ties and nothing reached go to the earliest variant")
    func bestVariant() {
        #expect(PushSplit.bestVariant(reached: [100, 100, 50], opened: [10, 12, 7]) == 2)
        #expect(PushSplit.bestVariant(reached: [100, 100], opened: [10, 10]) == 0)
        #expect(PushSplit.bestVariant(reached: [0, 0, 0], opened: [0, 0, 0]) == 0)
        #expect(PushSplit.bestVariant(reached: [0, 10], opened: [0, 1]) == 1)
    }
}
