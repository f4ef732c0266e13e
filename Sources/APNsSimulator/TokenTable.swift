#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A hash table from device tokens (``DeviceRegistry/TokenBytes``) to values, made for the
/// simulator's one lookup per request into a million devices: open addressing with linear
/// probing in one flat array, each slot holding its token and value together (one cache line),
/// at most half full, the slot found by a mixing hash of the token's words.
///
/// A `Dictionary` keyed by the token hashed every lookup with SipHash and read its keys and
/// values from separate arrays: under `make bench-e2e` its `find` alone was 2.3% of the machine,
/// the misses into a million-entry table more than the hashing. Device tokens are random bytes,
/// so a hash without a per-process seed spreads them evenly; the simulator's tables are filled by
/// its operator, not by whoever sends requests. Entries are added or replaced, never removed.
///
/// A table of a million devices spans 128 MB, so each lookup also missed the TLB; its memory is
/// asked of the kernel in 2 MB pages (`MADV_HUGEPAGE`, honoured where transparent huge pages are
/// `madvise` or `always`).
struct TokenTable<Value> {
    fileprivate typealias Slot = (token: DeviceRegistry.TokenBytes, value: Value)?

    private var slots: SlotStorage<Value>
    /// The capacity less one; the capacity is a power of two.
    private var mask: Int
    private(set) var count = 0

    init() {
        slots = SlotStorage(capacity: 16)
        mask = 15
    }

    subscript(token: DeviceRegistry.TokenBytes) -> Value? {
        var index = Self.hash(token) & mask
        while let slot = slots.base[index] {
            if slot.token == token { return slot.value }
            index = (index + 1) & mask
        }
        return nil
    }

    /// Adds `value` for `token`, replacing the one it had.
    mutating func set(_ value: Value, for token: DeviceRegistry.TokenBytes) {
        if (count + 1) * 2 > slots.capacity {
            grow()
        } else if !isKnownUniquelyReferenced(&slots) {
            let copy = SlotStorage<Value>(capacity: slots.capacity)
            copy.base.update(from: slots.base, count: slots.capacity)
            slots = copy
        }
        var index = Self.hash(token) & mask
        while let slot = slots.base[index] {
            if slot.token == token {
                slots.base[index] = (token, value)
                return
            }
            index = (index + 1) & mask
        }
        slots.base[index] = (token, value)
        count += 1
    }

    private mutating func grow() {
        let old = slots
        slots = SlotStorage(capacity: old.capacity * 2)
        mask = slots.capacity - 1
        count = 0
        for index in 0..<old.capacity {
            if let (token, value) = old.base[index] { set(value, for: token) }
        }
    }

    /// The token's words folded into one and mixed by MurmurHash3's 64-bit finalizer, whose
    /// every output bit depends on every input bit (so the mask may keep the low ones).
    static func hash(_ token: DeviceRegistry.TokenBytes) -> Int {
        let (a, b, c, d) = token.words
        var mixed = a ^ (b &<< 17 | b &>> 47) ^ (c &<< 31 | c &>> 33) ^ (d &<< 47 | d &>> 17) ^ UInt64(token.length)
        mixed ^= mixed &>> 33
        mixed &*= 0xFF51_AFD7_ED55_8CCD
        mixed ^= mixed &>> 33
        mixed &*= 0xC4CE_B9FE_1A85_EC53
        mixed ^= mixed &>> 33
        return Int(truncatingIfNeeded: mixed)
    }
}

/// The slots of a ``TokenTable``: `capacity` of them, all nil at first, in memory aligned to 2 MB
/// and advised into huge pages before it is first touched.
private final class SlotStorage<Value> {
    typealias Slot = TokenTable<Value>.Slot

    let base: UnsafeMutablePointer<Slot>
    let capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
        let bytes = capacity * MemoryLayout<Slot>.stride
        let hugePage = 2 << 20
        var memory: UnsafeMutableRawPointer?
        guard posix_memalign(&memory, max(hugePage, MemoryLayout<Slot>.alignment), bytes) == 0, let memory else {
            fatalError("apns-sim could not allocate \(bytes) bytes for its device table")
        }
        if bytes >= hugePage { _ = madvise(memory, bytes, MADV_HUGEPAGE) }
        base = memory.bindMemory(to: Slot.self, capacity: capacity)
        base.initialize(repeating: nil, count: capacity)
    }

    deinit {
        base.deinitialize(count: capacity)
        free(base)
    }
}
