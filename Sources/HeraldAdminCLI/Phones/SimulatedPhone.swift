import Crypto
import Foundation
import HeraldGatewayProtocol
import HeraldKit
import Synchronization

/// One simulated phone of `herald dev phones`: HeraldKit's long connection for its token, and a
/// record of what it received (the end-to-end tests read it from report.json).
final class SimulatedPhone: Sendable {
    /// What the phone saw, in the shape of report.json (docs/cli.md, `herald dev phones`).
    struct Record: Sendable {
        var live = false
        var welcomes = 0
        /// (push id of the frame, the payload's herald.push_id, milliseconds since 1970).
        var pushes: [(String, String, Double)] = []
        var revokes: [String] = []
        /// (push id, type, action) stored by POST /v1/events.
        var events: [(String, String, String)] = []
        /// What the repeated batches counted again (0 when the server de-duplicates).
        var recounted = 0
        var eventFailures: [(String, Int, String)] = []
    }

    let token: String
    let environment: String
    let acknowledges: Bool
    let record = Mutex(Record())

    init(token: String, environment: String, acknowledges: Bool) {
        self.token = token.lowercased()
        self.environment = environment
        self.acknowledges = acknowledges
    }

    /// Keeps a push that arrived.
    func received(_ push: GatewayPush, at milliseconds: Double) -> String {
        let pushID = UUID(gatewayBytes: push.pushID)?.uuidString.lowercased() ?? ""
        let marked = HeraldPayload(payload: push.payload)?.pushID.uuidString.lowercased() ?? ""
        record.withLock { $0.pushes.append((pushID, marked, milliseconds)) }
        return pushID
    }

    /// What this phone's user does with `pushID` (docs/cli.md): `received` always; `opened` for a
    /// share of the pushes and an `action` "reply" for a share of those opened, chosen by a hash of
    /// (token, push id) so that a run is repeatable and a test can recompute it.
    func choices(for pushID: String, openShare: Double, actionShare: Double) -> [(EngagementEvent.Kind, String?)] {
        let digest = Array(SHA256.hash(data: Array("\(token):\(pushID)".utf8)))
        var chosen: [(EngagementEvent.Kind, String?)] = [(.received, nil)]
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
