/// A map of at most `capacity` entries that, when full, forgets the entry used least recently.
/// Lookups and insertions take constant time: entries sit in a doubly linked list, by index, in
/// order of use. Not thread-safe: its owner guards it.
public struct LeastRecentlyUsed<Key: Hashable, Value> {
    private struct Node {
        var key: Key
        var value: Value
        var newer: Int?
        var older: Int?
    }

    public let capacity: Int
    private var nodes: [Node] = []
    private var indices: [Key: Int] = [:]
    /// The most recently used entry's index, and the least recently used one's.
    private var newest: Int?
    private var oldest: Int?

    public init(capacity: Int) {
        precondition(capacity > 0)
        self.capacity = capacity
    }

    public var count: Int { indices.count }

    /// The value of `key`, which becomes the most recently used.
    public mutating func value(for key: Key) -> Value? {
        guard let index = indices[key] else { return nil }
        moveToNewest(index)
        return nodes[index].value
    }

    /// Sets `key`'s value (as the most recently used); forgets the least recently used entry when
    /// that makes one too many.
    public mutating func set(_ value: Value, for key: Key) {
        if let index = indices[key] {
            nodes[index].value = value
            moveToNewest(index)
            return
        }
        let index: Int
        if nodes.count < capacity {
            index = nodes.count
            nodes.append(Node(key: key, value: value, newer: nil, older: nil))
        } else {
            // Reuse the least recently used entry's slot.
            index = oldest!
            unlink(index)
            indices[nodes[index].key] = nil
            nodes[index] = Node(key: key, value: value, newer: nil, older: nil)
        }
        indices[key] = index
        linkAsNewest(index)
    }

    /// Forgets every entry whose value satisfies `shouldForget`.
    public mutating func removeAll(where shouldForget: (Value) -> Bool) {
        let kept = orderedFromOldest().filter { !shouldForget($0.value) }
        self = LeastRecentlyUsed(capacity: capacity)
        for (key, value) in kept { set(value, for: key) }
    }

    private func orderedFromOldest() -> [(key: Key, value: Value)] {
        var entries: [(key: Key, value: Value)] = []
        var cursor = oldest
        while let index = cursor {
            entries.append((nodes[index].key, nodes[index].value))
            cursor = nodes[index].newer
        }
        return entries
    }

    private mutating func moveToNewest(_ index: Int) {
        guard newest != index else { return }
        unlink(index)
        linkAsNewest(index)
    }

    private mutating func unlink(_ index: Int) {
        let (newer, older) = (nodes[index].newer, nodes[index].older)
        if let newer { nodes[newer].older = older } else { newest = older }
        if let older { nodes[older].newer = newer } else { oldest = newer }
        nodes[index].newer = nil
        nodes[index].older = nil
    }

    private mutating func linkAsNewest(_ index: Int) {
        nodes[index].older = newest
        nodes[index].newer = nil
        if let newest { nodes[newest].newer = index }
        newest = index
        if oldest == nil { oldest = index }
    }
}
