import Foundation

/// What a recall asks the phone to remove (docs/gateway.md, "Revoke"; docs/api.md, the recall
/// push): the notification of a push id, and any shown under a collapse id. It arrives as a
/// gateway `Revoke` frame or as the recall's background push through APNs; both read the same.
public struct Revocation: Sendable, Hashable {
    /// The push whose notification goes.
    public var pushID: UUID?
    /// The collapse id whose notifications go (a push's own collapse id, or the operator's).
    public var collapseID: String?

    public init(pushID: UUID?, collapseID: String?) {
        self.pushID = pushID
        self.collapseID = collapseID?.isEmpty == true ? nil : collapseID
    }
}
