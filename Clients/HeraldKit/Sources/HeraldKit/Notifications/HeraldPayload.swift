import Foundation

/// What Herald put in a payload under its `herald` key (docs/api.md, "The push id in every
/// payload"): the push id every notification carries, and for a recall the push it revokes and
/// that push's collapse id. Read the same from an APNs notification's `userInfo` and from a
/// gateway push's payload bytes.
public struct HeraldPayload: Sendable, Hashable {
    /// The push this payload belongs to (a recall's own id, for a recall).
    public var pushID: UUID
    /// For a recall: the push whose notification to remove.
    public var revokes: UUID?
    /// For a recall: the collapse id of the push it revokes.
    public var revokesCollapseID: String?

    public init(pushID: UUID, revokes: UUID? = nil, revokesCollapseID: String? = nil) {
        self.pushID = pushID
        self.revokes = revokes
        self.revokesCollapseID = revokesCollapseID
    }

    /// What a recall asks for; nil for any other push.
    public var revocation: Revocation? {
        guard revokes != nil || revokesCollapseID != nil else { return nil }
        return Revocation(pushID: revokes, collapseID: revokesCollapseID)
    }

    /// Reads the `herald` key of a notification's `userInfo` (or any decoded JSON object); nil
    /// when there is none or its push id is not a UUID (a notification Herald did not send).
    public init?(userInfo: [AnyHashable: Any]) {
        guard let herald = userInfo[Self.key] as? [String: Any],
            let text = herald["push_id"] as? String, let pushID = UUID(uuidString: text)
        else { return nil }
        self.pushID = pushID
        revokes = (herald["revoke"] as? String).flatMap(UUID.init(uuidString:))
        revokesCollapseID = (herald["collapse_id"] as? String).flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Reads the `herald` key of a payload's JSON text.
    public init?(payload: some Collection<UInt8>) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any] else {
            return nil
        }
        self.init(userInfo: object)
    }

    /// The top-level key.
    public static let key = "herald"
}
