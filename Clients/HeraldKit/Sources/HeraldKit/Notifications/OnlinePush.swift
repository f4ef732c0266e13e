import Foundation
import HeraldGatewayProtocol

/// A push that came over the long connection, read: its id, collapse id, payload, and the local
/// notification that shows it as APNs would have (nil for a background push, which has nothing
/// to show and goes to the app's handler only).
public struct OnlinePush: Sendable, Equatable {
    public var pushID: UUID
    public var collapseID: String
    /// The payload's JSON object (with `aps` and `herald`).
    public var payload: [String: JSONValue]
    /// `alert`, `background`, … as APNs' `apns-push-type`.
    public var pushType: String
    /// When it stops mattering (Unix seconds; 0: never). A push past it is acknowledged, not shown.
    public var expiresAt: Int64

    /// Reads a `Push` frame; nil when its push id is not 16 bytes or its payload not a JSON object.
    public init?(_ frame: GatewayPush) {
        guard let pushID = UUID(gatewayBytes: frame.pushID), let payload = JSONValue.object(parsing: frame.payload)
        else { return nil }
        self.pushID = pushID
        collapseID = frame.collapseID.isEmpty ? pushID.uuidString.lowercased() : frame.collapseID
        self.payload = payload
        pushType = frame.pushType
        expiresAt = frame.expiresAt
    }

    /// Whether it expired before `now` (acknowledge it, do not show it: docs/gateway.md).
    public func isExpired(at now: Date) -> Bool {
        expiresAt > 0 && Double(expiresAt) < now.timeIntervalSince1970
    }

    /// The notification to show for it, under its collapse id; nil when its `aps` has no alert
    /// (a background push: the app's handler gets it, nothing is shown).
    public var localNotification: LocalNotification? {
        guard let aps = payload["aps"], let alert = aps["alert"] else { return nil }
        var notification = LocalNotification(identifier: collapseID, userInfo: payload)
        switch alert {
        case .string(let body):
            notification.body = body
        case .object:
            notification.title = alert["title"]?.stringValue
            notification.subtitle = alert["subtitle"]?.stringValue
            notification.body = alert["body"]?.stringValue
        default:
            return nil
        }
        notification.badge = aps["badge"]?.intValue
        notification.sound = aps["sound"]?.stringValue ?? aps["sound"]?["name"]?.stringValue
        notification.threadIdentifier = aps["thread-id"]?.stringValue
        notification.categoryIdentifier = aps["category"]?.stringValue
        return notification
    }
}
