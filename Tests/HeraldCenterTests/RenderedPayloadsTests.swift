import Testing

@testable import HeraldCenter

/// A templated batch's payloads kept once each (RenderedPayloads), against a plain dictionary doing
/// the same: every target points at its own bytes, each distinct payload is kept once, in the order
/// first seen.
@Suite("Rendered payloads of a batch (pure logic)")
struct RenderedPayloadsTests {
    @Test("repeats, the empty payload, lengths around the eight-byte steps and a full table agree with a dictionary")
    func agreesWithADictionary() {
        var generator = SystemRandomNumberGenerator()
        // Lengths 0…40 cover every tail length; few distinct values make repeats common; 500
        // targets fill the table's probe chains.
        let pool: [[UInt8]] = (0..<180).map { index in
            (0..<(index % 41)).map { _ in UInt8.random(in: 0...3, using: &generator) }
        }
        let payloads = (0..<500).map { _ in pool.randomElement(using: &generator)! }
        var table = RenderedPayloads(targets: payloads.count)
        var known: [[UInt8]: UInt32] = [:]
        var expected: [[UInt8]] = []
        for payload in payloads {
            table.append(payload)
            if known[payload] == nil {
                known[payload] = UInt32(expected.count)
                expected.append(payload)
            }
        }
        #expect(table.distinct == expected)
        #expect(table.indexes == payloads.map { known[$0]! })
        #expect(table.indexes.count == payloads.count)
    }

    @Test("payloads that differ in one byte anywhere, or only in length, are kept apart")
    func nearMisses() {
        let base = Array(#"{"aps":{"alert":"Hi gold, DE"},"score":42}"#.utf8)
        var variants: [[UInt8]] = [base, base + [0], Array(base.dropLast())]
        for position in base.indices {
            var changed = base
            changed[position] ^= 1
            variants.append(changed)
        }
        var table = RenderedPayloads(targets: variants.count * 2)
        for payload in variants + variants { table.append(payload) }
        #expect(table.distinct == variants)
        #expect(table.indexes == (0..<variants.count).map(UInt32.init) + (0..<variants.count).map(UInt32.init))
    }

    @Test("the hash reads every byte: a change in the tail or in a full word changes it")
    func hashReadsEveryByte() {
        let bytes = Array("0123456789abcdefXYZ".utf8)
        let hash = RenderedPayloads.hash(bytes)
        for position in bytes.indices {
            var changed = bytes
            changed[position] &+= 1
            #expect(RenderedPayloads.hash(changed) != hash)
        }
        #expect(RenderedPayloads.hash([]) != RenderedPayloads.hash([0]))
    }
}
