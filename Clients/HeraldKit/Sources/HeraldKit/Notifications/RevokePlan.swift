/// Which notifications a revoke removes (docs/gateway.md, "Revoke"): those whose payload names
/// the revoked push id, and those shown or pending under the collapse id (the request identifier
/// of a remote notification with a collapse id, and of every push HeraldKit shows itself).
public struct RevokePlan: Sendable, Equatable {
    /// Shown notifications to remove.
    public var delivered: [String]
    /// Scheduled notifications to remove.
    public var pending: [String]

    public init(revoking revocation: Revocation, delivered: [NotificationRecord], pending: [NotificationRecord]) {
        self.delivered = Self.matching(revocation, in: delivered)
        self.pending = Self.matching(revocation, in: pending)
    }

    public var isEmpty: Bool { delivered.isEmpty && pending.isEmpty }

    static func matching(_ revocation: Revocation, in records: [NotificationRecord]) -> [String] {
        var seen = Set<String>()
        return records.compactMap { record in
            let byPush = revocation.pushID != nil && record.pushID == revocation.pushID
            let byCollapse = revocation.collapseID != nil && record.identifier == revocation.collapseID
            guard byPush || byCollapse, seen.insert(record.identifier).inserted else { return nil }
            return record.identifier
        }
    }
}
