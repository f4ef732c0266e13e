import Foundation

/// The push ids this device showed (or held) lately, so that a push that reached it both over the
/// long connection and through APNs is shown once (docs/gateway.md, "Showing a notification
/// once"). Bounded: the oldest ids go first once `capacity` are kept (a push's second copy
/// arrives within seconds to hours of its first, never after a thousand newer pushes).
///
/// Codable, so the client keeps it on disk across launches: an app killed between the two
/// copies still shows one.
public struct ShownPushes: Sendable, Codable, Equatable {
    /// The most ids kept.
    public let capacity: Int
    private var order: [UUID]
    private var members: Set<UUID>

    public init(capacity: Int = 1_000) {
        precondition(capacity > 0, "ShownPushes keeps at least one push id")
        self.capacity = capacity
        order = []
        members = []
    }

    /// Whether `pushID` is seen for the first time; it is remembered either way.
    public mutating func firstSight(of pushID: UUID) -> Bool {
        guard members.insert(pushID).inserted else { return false }
        order.append(pushID)
        if order.count > capacity {
            let dropped = order.count - capacity
            for old in order.prefix(dropped) { members.remove(old) }
            order.removeFirst(dropped)
        }
        return true
    }

    /// Whether `pushID` was seen.
    public func contains(_ pushID: UUID) -> Bool { members.contains(pushID) }

    /// The ids kept, oldest first.
    public var pushIDs: [UUID] { order }

    private enum CodingKeys: String, CodingKey {
        case capacity
        case pushIDs = "push_ids"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(capacity: try container.decode(Int.self, forKey: .capacity))
        for id in try container.decode([UUID].self, forKey: .pushIDs) { _ = firstSight(of: id) }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(capacity, forKey: .capacity)
        try container.encode(order, forKey: .pushIDs)
    }
}
