import Foundation

/// One job batch's rendered payloads as its record carries them: each distinct payload once, and
/// each target's index among them, in the targets' order.
///
/// A personalized batch's payloads mostly differ, so this runs once per notification on a templated
/// fan-out's hot path. A payload is hashed in one pass, eight bytes at a time, into an
/// open-addressing table sized for the batch. A `[[UInt8]: UInt32]` dictionary hashes an array a
/// byte at a time: that took 45 % of the center's CPU in a templated fan-out (docs/benchmarks.md).
/// The table lives for one batch, so payloads made to collide cost at most a batch's comparisons.
struct RenderedPayloads {
    /// The distinct payloads, in the order they were first seen.
    private(set) var distinct: [[UInt8]] = []
    /// Each target's index into ``distinct``.
    private(set) var indexes: [UInt32] = []
    private var hashes: [UInt64] = []
    /// Index into `distinct` of the payload in each slot; -1: empty.
    private var slots: [Int32]
    private let mask: Int

    /// A table for a batch of `targets` devices.
    init(targets: Int) {
        var size = 16
        while size < targets * 2 { size <<= 1 }
        slots = [Int32](repeating: -1, count: size)
        mask = size - 1
        indexes.reserveCapacity(targets)
    }

    /// Adds the next target's payload (at most the `targets` the table was made for).
    mutating func append(_ payload: [UInt8]) {
        // An empty slot is left (the probe below ends) while fewer payloads than slots are kept.
        precondition(distinct.count < slots.count, "more payloads than the batch's table was made for")
        let hash = Self.hash(payload)
        var slot = Int(truncatingIfNeeded: hash) & mask
        while true {
            let index = Int(slots[slot])
            if index < 0 {
                slots[slot] = Int32(distinct.count)
                indexes.append(UInt32(distinct.count))
                distinct.append(payload)
                hashes.append(hash)
                return
            }
            if hashes[index] == hash, Self.same(distinct[index], payload) {
                indexes.append(UInt32(index))
                return
            }
            slot = (slot + 1) & mask
        }
    }

    /// A 64-bit hash of `bytes`, eight at a time (not a defence against crafted collisions: the
    /// table is a batch's, see above).
    static func hash(_ bytes: [UInt8]) -> UInt64 {
        bytes.withUnsafeBytes { raw in
            var hash = 0x9E37_79B9_7F4A_7C15 ^ UInt64(raw.count)
            var offset = 0
            while offset + 8 <= raw.count {
                hash = (hash ^ raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) &* 0xFF51_AFD7_ED55_8CCD
                hash ^= hash >> 32
                offset += 8
            }
            var tail: UInt64 = 0
            while offset < raw.count {
                tail = tail << 8 | UInt64(raw[offset])
                offset += 1
            }
            // MurmurHash3's finalizer: every input bit moves the low bits the table uses.
            hash ^= tail
            hash ^= hash >> 33
            hash &*= 0xFF51_AFD7_ED55_8CCD
            hash ^= hash >> 33
            hash &*= 0xC4CE_B9FE_1A85_EC53
            return hash ^ (hash >> 33)
        }
    }

    private static func same(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return a.withUnsafeBytes { a in
            b.withUnsafeBytes { b in a.count == 0 || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0 }
        }
    }
}
