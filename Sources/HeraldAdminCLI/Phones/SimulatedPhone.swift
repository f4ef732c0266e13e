import Crypto
import Foundation
import HeraldGatewayProtocol
import HeraldKit
import Synchronization

/// One simulated phone of `herald dev phones`: in the foreground, HeraldKit's long connection for
/// its token; in the background, only what APNs (apns-sim) delivers to it. Either way a record of
/// what it received and showed (the end-to-end tests read it from report.json).
final class SimulatedPhone: Sendable {
    /// What the phone saw, in the shape of report.json (docs/cli.md, `herald dev phones`).
    struct Record: Sendable {
        var live = false
        var welcomes = 0
        /// (push id of the frame, the payload's herald.push_id, milliseconds since 1970).
        var pushes: [(String, String, Double)] = []
        var revokes: [String] = []
        /// (apns-id, the payload's herald.push_id, apns-sim's receipt time in ms): the APNs copies.
        var apns: [(String, String, Double)] = []
        /// The push ids a user saw, each once whichever road brought it (HeraldKit's ShownPushes).
        var shown: [String] = []
        /// Push ids of copies that arrived after the push was shown, and so were not shown again.
        var duplicates: [String] = []
        var seen = ShownPushes()
        /// (push id, type, action) stored by POST /v1/events.
        var events: [(String, String, String)] = []
        /// What the repeated batches counted again (0 when the server de-duplicates).
        var recounted = 0
        var eventFailures: [(String, Int, String)] = []
    }

    let token: String
    let environment: String
    let acknowledges: Bool
    /// In the foreground: holds a connection. In the background: reached through APNs only.
    let inForeground: Bool
    let record = Mutex(Record())

    init(token: String, environment: String, acknowledges: Bool, inForeground: Bool = true) {
        self.token = token.lowercased()
        self.environment = environment
        self.acknowledges = acknowledges
        self.inForeground = inForeground
    }

    /// Keeps a push that arrived over the connection.
    func received(_ push: GatewayPush, at milliseconds: Double) -> String {
        let pushID = UUID(gatewayBytes: push.pushID)?.uuidString.lowercased() ?? ""
        let object = (try? JSONSerialization.jsonObject(with: Data(push.payload))) as? [String: Any] ?? [:]
        let payload = HeraldPayload(userInfo: object)
        record.withLock { record in
            record.pushes.append((pushID, payload?.pushID.uuidString.lowercased() ?? "", milliseconds))
            record.showIfAlert(payload, aps: object["aps"] as? [String: Any] ?? [:])
        }
        return pushID
    }

    /// What an APNs copy did on this phone.
    enum APNsArrival: Equatable {
        /// An alert shown for the first time: the user may open it.
        case shown(pushID: String, serviceExtensionRan: Bool)
        /// Already shown (it came over the connection first), a recall, or no alert: nothing to open.
        case nothingToOpen
    }

    /// Keeps an APNs copy (a line of apns-sim's `GET /notifications`).
    func receivedThroughAPNs(apnsID: String, payload: [String: Any], at milliseconds: Double) -> APNsArrival {
        let herald = HeraldPayload(userInfo: payload)
        let aps = payload["aps"] as? [String: Any] ?? [:]
        return record.withLock { record in
            record.apns.append((apnsID, herald?.pushID.uuidString.lowercased() ?? "", milliseconds))
            guard let herald else { return .nothingToOpen }
            if let revocation = herald.revocation {
                // The app, woken in the background, removes the notification (best effort on a
                // real phone); a revoke that came over the connection first is not counted again.
                let revoked = revocation.pushID?.uuidString.lowercased() ?? ""
                if !record.revokes.contains(revoked) { record.revokes.append(revoked) }
                return .nothingToOpen
            }
            guard record.showIfAlert(herald, aps: aps) else { return .nothingToOpen }
            let mutable = (aps["mutable-content"] as? Int) == 1
            return .shown(pushID: herald.pushID.uuidString.lowercased(), serviceExtensionRan: mutable)
        }
    }

    /// What this phone's user does with `pushID` (docs/cli.md): `received` always; `opened` for a
    /// share of the pushes and an `action` "reply" for a share of those opened, chosen by a hash of
    /// (token, push id) so that a run is repeatable and a test can recompute it.
    /// A phone in the background reports `received` only when its notification service extension
    /// ran (`receivedReported`: the alert had mutable-content).
    func choices(for pushID: String, openShare: Double, actionShare: Double, receivedReported: Bool = true) -> [(
        EngagementEvent.Kind, String?
    )] {
        let digest = Array(SHA256.hash(data: Array("\(token):\(pushID)".utf8)))
        var chosen: [(EngagementEvent.Kind, String?)] = receivedReported ? [(.received, nil)] : []
        if Double(digest[0]) / 256 < openShare {
            chosen.append((.opened, nil))
            if Double(digest[1]) / 256 < actionShare { chosen.append((.action, "reply")) }
        }
        return chosen
    }

    /// The phone's entry of report.json.
    var report: [String: Any] {
        record.withLock { record in
            [
                "acknowledges": acknowledges,
                "foreground": inForeground,
                "apns": record.apns.map { [$0.0, $0.1, $0.2] as [Any] },
                "shown": record.shown,
                "duplicates": record.duplicates,
                "pushes": record.pushes.map { [$0.0, $0.1, $0.2] as [Any] },
                "revokes": record.revokes,
                "welcomes": record.welcomes,
                "events": record.events.map { [$0.0, $0.1, $0.2] },
                "recounted": record.recounted,
                "event_failures": record.eventFailures.map { [$0.0, $0.1, $0.2] as [Any] },
            ]
        }
    }
}

extension SimulatedPhone.Record {
    /// Shows a push that arrived by either road if it is an alert and not a recall, unless it was
    /// shown already (then counts a duplicate); whether it was shown now.
    @discardableResult
    mutating func showIfAlert(_ payload: HeraldPayload?, aps: [String: Any]) -> Bool {
        guard let pushID = payload?.pushID, payload?.revocation == nil, aps["alert"] != nil else { return false }
        let text = pushID.uuidString.lowercased()
        guard seen.firstSight(of: pushID) else {
            duplicates.append(text)
            return false
        }
        shown.append(text)
        return true
    }
}
