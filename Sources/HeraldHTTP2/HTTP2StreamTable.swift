/// Values by HTTP/2 stream ID: what a session looks up on every frame it reads and writes.
///
/// An open-addressing table with linear probing, at most half full, where `Dictionary` hashes
/// every key with SipHash (the sender looks a stream up four times per notification). A stream
/// ID's home slot is the top bits of the ID times 2^32/φ (Fibonacci hashing): a connection's IDs
/// come one after another, and consecutive keys land spread evenly over the table instead of in
/// one long run of neighbouring slots, which would make every removal walk the whole run.
/// Stream ID 0 (the connection) is never stored.
struct HTTP2StreamTable<Value>: Sequence {
    /// Stream IDs by slot; 0 marks an empty slot.
    private var streamIDs: [Int32]
    private var values: [Value?]
    private var mask: Int
    /// 32 minus log2 of the slot count: how far the product is shifted to give a slot.
    private var shift: Int
    private(set) var count = 0

    init() {
        streamIDs = Array(repeating: 0, count: 16)
        values = Array(repeating: nil, count: 16)
        mask = 15
        shift = 28
    }

    var isEmpty: Bool { count == 0 }

    /// The slot `streamID` starts probing from, in a table of 2^(32 - `shift`) slots.
    static func home(of streamID: Int32, shift: Int) -> Int {
        Int(truncatingIfNeeded: (UInt32(bitPattern: streamID) &* 0x9E37_79B9) >> UInt32(shift))
    }

    private func home(of streamID: Int32) -> Int { Self.home(of: streamID, shift: shift) }

    /// The slot holding `streamID`, or nil.
    private func slot(of streamID: Int32) -> Int? {
        var slot = home(of: streamID)
        while true {
            let stored = streamIDs[slot]
            if stored == streamID { return slot }
            if stored == 0 { return nil }
            slot = (slot + 1) & mask
        }
    }

    subscript(streamID: Int32) -> Value? {
        get { slot(of: streamID).flatMap { values[$0] } }
        set {
            if let newValue {
                insert(newValue, for: streamID)
            } else {
                removeValue(forKey: streamID)
            }
        }
    }

    private mutating func insert(_ value: Value, for streamID: Int32) {
        precondition(streamID != 0, "stream 0 is the connection, not a stream")
        if let slot = slot(of: streamID) {
            values[slot] = value
            return
        }
        if (count + 1) * 2 > streamIDs.count { grow() }
        var slot = home(of: streamID)
        while streamIDs[slot] != 0 { slot = (slot + 1) & mask }
        streamIDs[slot] = streamID
        values[slot] = value
        count += 1
    }

    @discardableResult
    mutating func removeValue(forKey streamID: Int32) -> Value? {
        guard var empty = slot(of: streamID) else { return nil }
        let removed = values[empty]
        // Backward-shift deletion: entries after the hole that probed past it move into it, so
        // every entry stays reachable from its home slot without tombstones.
        var next = empty
        while true {
            next = (next + 1) & mask
            let stored = streamIDs[next]
            if stored == 0 { break }
            let start = home(of: stored)
            // Whether its home slot lies cyclically in (empty, next]: then the entry stays.
            let stays = empty <= next ? (empty < start && start <= next) : (empty < start || start <= next)
            if !stays {
                streamIDs[empty] = stored
                values[empty] = values[next]
                empty = next
            }
        }
        streamIDs[empty] = 0
        values[empty] = nil
        count -= 1
        return removed
    }

    mutating func removeAll() {
        guard count > 0 else { return }
        for slot in streamIDs.indices where streamIDs[slot] != 0 {
            streamIDs[slot] = 0
            values[slot] = nil
        }
        count = 0
    }

    private mutating func grow() {
        let oldIDs = streamIDs
        let oldValues = values
        streamIDs = Array(repeating: 0, count: oldIDs.count * 2)
        values = Array(repeating: nil, count: oldIDs.count * 2)
        mask = streamIDs.count - 1
        shift -= 1
        for (slot, streamID) in oldIDs.enumerated() where streamID != 0 {
            var target = home(of: streamID)
            while streamIDs[target] != 0 { target = (target + 1) & mask }
            streamIDs[target] = streamID
            values[target] = oldValues[slot]
        }
    }

    /// Every stream and its value, in no particular order.
    func makeIterator() -> AnyIterator<(streamID: Int32, value: Value)> {
        var slot = 0
        let streamIDs = streamIDs
        let values = values
        return AnyIterator {
            while slot < streamIDs.count {
                defer { slot += 1 }
                if streamIDs[slot] != 0, let value = values[slot] { return (streamIDs[slot], value) }
            }
            return nil
        }
    }
}
