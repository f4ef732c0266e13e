import Foundation
import HeraldGatewayProtocol
import Testing

@testable import HeraldKit

/// A transport with no server behind it: these tests make no request.
struct Unreachable: HeraldHTTPTransport {
    struct NoNetwork: Error {}
    func send(method: String, url: URL, headers: [String: String], body: Data) async throws -> HeraldHTTPAnswer {
        throw NoNetwork()
    }
}

func pushFrame(id: UUID, collapseID: String = "", payload: String, delivery: UInt64 = 1) -> GatewayPush {
    GatewayPush.with {
        $0.pushID = withUnsafeBytes(of: id.uuid) { Data($0) }
        $0.collapseID = collapseID
        $0.payload = Data(payload.utf8)
        $0.pushType = "alert"
        $0.delivery = delivery
    }
}

@Suite("showing once, recall and replace, as pure decisions")
struct NotificationLogicTests {
    @Test("the herald key is read from userInfo and from payload bytes; a recall's revocation too")
    func heraldPayload() {
        let push = UUID()
        let original = UUID()
        #expect(HeraldPayload(userInfo: ["herald": ["push_id": push.uuidString.lowercased()]])?.pushID == push)
        #expect(HeraldPayload(userInfo: ["aps": ["alert": "x"]]) == nil, "not Herald's")
        #expect(HeraldPayload(userInfo: ["herald": ["push_id": "not-a-uuid"]]) == nil)
        let recall = HeraldPayload(
            payload: Array(
                #"{"aps":{"content-available":1},"herald":{"push_id":"\#(push)","revoke":"\#(original)","collapse_id":"sale"}}"#
                    .utf8))
        #expect(recall?.revocation == Revocation(pushID: original, collapseID: "sale"))
        #expect(HeraldPayload(payload: Array(#"{"herald":{"push_id":"\#(push)"}}"#.utf8))?.revocation == nil)
    }

    @Test("a push id is shown once; the oldest are forgotten past the capacity; the set survives encoding")
    func shownOnce() throws {
        var shown = ShownPushes(capacity: 3)
        let ids = (0..<5).map { _ in UUID() }
        let first = shown.firstSight(of: ids[0])
        let second = shown.firstSight(of: ids[0])
        #expect(first && !second)
        for id in ids[1...] { _ = shown.firstSight(of: id) }
        #expect(shown.pushIDs == Array(ids[2...]))
        #expect(!shown.contains(ids[0]))
        let copy = try JSONDecoder().decode(ShownPushes.self, from: JSONEncoder().encode(shown))
        #expect(copy == shown)
        #expect(!copy.contains(ids[1]))
    }

    @Test("a revoke removes by push id and by collapse id, shown and pending, each once")
    func revokePlan() {
        let target = UUID()
        let other = UUID()
        let delivered = [
            NotificationRecord(identifier: "a", pushID: target),
            NotificationRecord(identifier: "sale", pushID: nil),
            NotificationRecord(identifier: "b", pushID: other),
        ]
        let pending = [
            NotificationRecord(identifier: "sale", pushID: other), NotificationRecord(identifier: "c", pushID: nil),
        ]
        let both = RevokePlan(
            revoking: Revocation(pushID: target, collapseID: "sale"), delivered: delivered, pending: pending)
        #expect(both.delivered == ["a", "sale"])
        #expect(both.pending == ["sale"])
        let byID = RevokePlan(
            revoking: Revocation(pushID: target, collapseID: ""), delivered: delivered, pending: pending)
        #expect(byID.delivered == ["a"])
        #expect(byID.pending.isEmpty)
        #expect(
            RevokePlan(revoking: Revocation(pushID: UUID(), collapseID: nil), delivered: delivered, pending: pending)
                .isEmpty)
    }

    @Test("an online alert becomes a local notification under its collapse id; a background push shows nothing")
    func onlinePush() throws {
        let id = UUID()
        let frame = pushFrame(
            id: id, collapseID: "sale",
            payload:
                #"{"aps":{"alert":{"title":"Sale","subtitle":"today","body":"20% off"},"badge":3,"sound":"default","thread-id":"t","category":"buy"},"herald":{"push_id":"\#(id)"}}"#
        )
        let push = try #require(OnlinePush(frame))
        #expect(push.pushID == id)
        let notification = try #require(push.localNotification)
        #expect(notification.identifier == "sale")
        #expect(notification.title == "Sale")
        #expect(notification.subtitle == "today")
        #expect(notification.body == "20% off")
        #expect(notification.badge == 3)
        #expect(notification.sound == "default")
        #expect(notification.threadIdentifier == "t")
        #expect(notification.categoryIdentifier == "buy")
        #expect(notification.userInfo["herald"]?["push_id"]?.stringValue == id.uuidString)

        let plain = try #require(OnlinePush(pushFrame(id: id, payload: #"{"aps":{"alert":"Hi"}}"#)))
        #expect(plain.localNotification?.identifier == id.uuidString.lowercased(), "no collapse id: the push id")
        #expect(plain.localNotification?.body == "Hi")
        let background = try #require(OnlinePush(pushFrame(id: id, payload: #"{"aps":{"content-available":1}}"#)))
        #expect(background.localNotification == nil)
        #expect(OnlinePush(pushFrame(id: id, payload: "not json")) == nil)
    }

    @Test("a local trigger matches the date once, the time daily, the weekday and time weekly, in its time zone")
    func localTrigger() throws {
        let berlin = try #require(TimeZone(identifier: "Europe/Berlin"))
        // 2026-11-30 08:30:00 UTC = 09:30 in Berlin, a Monday.
        let date = Date(timeIntervalSince1970: 1_796_027_400)
        let once = LocalTrigger(fireDate: date, timeZone: berlin).dateComponents
        #expect([once.year, once.month, once.day, once.hour, once.minute] == [2026, 11, 30, 9, 30])
        let daily = LocalTrigger(fireDate: date, timeZone: berlin, repeats: .daily).dateComponents
        #expect(daily.day == nil && daily.hour == 9 && daily.minute == 30)
        let weekly = LocalTrigger(fireDate: date, timeZone: berlin, repeats: .weekly).dateComponents
        #expect(weekly.weekday == 2 && weekly.hour == 9)
    }

    @Test("the client shows an online push once even when APNs brings it too, and the reverse")
    func clientDeduplicates() async throws {
        let center = InMemoryNotificationCenter()
        let client = HeraldClient(
            configuration: HeraldConfiguration(apiURL: URL(string: "http://127.0.0.1:9")!, clientKey: "k"),
            notificationCenter: center, storage: InMemoryStorage(), transport: Unreachable())
        let first = UUID()
        let payload = #"{"aps":{"alert":"Hi"},"herald":{"push_id":"\#(first)"}}"#
        await client.arrivedOnline(pushFrame(id: first, collapseID: "c1", payload: payload))
        #expect(await center.deliveredRecords.count == 1)
        let again = await client.handleRemoteNotification(userInfo: ["herald": ["push_id": first.uuidString]])
        #expect(again == .duplicate)
        await client.arrivedOnline(pushFrame(id: first, collapseID: "c1", payload: payload, delivery: 2))
        #expect(await center.added.count == 1, "a second online copy is not shown either")

        let second = UUID()
        #expect(await client.handleRemoteNotification(userInfo: ["herald": ["push_id": second.uuidString]]) == .show)
        await client.arrivedOnline(
            pushFrame(id: second, payload: #"{"aps":{"alert":"Yo"},"herald":{"push_id":"\#(second)"}}"#))
        #expect(await center.added.count == 1, "APNs brought it first: the online copy is not shown")
        #expect(await client.handleRemoteNotification(userInfo: ["aps": [:]]) == .notHerald)
    }

    @Test("a recall through APNs and a revoke frame remove delivered and pending copies; a late original is not shown")
    func clientRevokes() async throws {
        let center = InMemoryNotificationCenter()
        let storage = InMemoryStorage()
        let client = HeraldClient(
            configuration: HeraldConfiguration(apiURL: URL(string: "http://127.0.0.1:9")!, clientKey: "k"),
            notificationCenter: center, storage: storage, transport: Unreachable())
        let original = UUID()
        await center.systemDelivered(NotificationRecord(identifier: "sale", pushID: original))
        try await center.add(
            LocalNotification(
                identifier: "reminder",
                userInfo: ["herald": .object(["push_id": .string(original.uuidString.lowercased())])],
                trigger: LocalTrigger(fireDate: Date().addingTimeInterval(3600))))
        let recall: [AnyHashable: Any] = [
            "aps": ["content-available": 1],
            "herald": ["push_id": UUID().uuidString, "revoke": original.uuidString, "collapse_id": "sale"],
        ]
        let result = await client.handleRemoteNotification(userInfo: recall)
        #expect(
            result
                == .revoked(
                    RevokePlan(
                        revoking: Revocation(pushID: original, collapseID: "sale"),
                        delivered: [NotificationRecord(identifier: "sale", pushID: original)],
                        pending: [NotificationRecord(identifier: "reminder", pushID: original)])))
        #expect(await center.removedDelivered == ["sale"])
        #expect(await center.removedPending == ["reminder"])

        let late = UUID()
        await client.revoke(Revocation(pushID: late, collapseID: nil))
        await client.arrivedOnline(
            pushFrame(id: late, payload: #"{"aps":{"alert":"late"},"herald":{"push_id":"\#(late)"}}"#))
        #expect(await center.deliveredRecords.isEmpty, "the revoke came first: its push is not shown")
        let relaunched = HeraldClient(
            configuration: HeraldConfiguration(apiURL: URL(string: "http://127.0.0.1:9")!, clientKey: "k"),
            notificationCenter: center, storage: storage, transport: Unreachable())
        #expect(
            await relaunched.handleRemoteNotification(userInfo: ["herald": ["push_id": late.uuidString]]) == .duplicate,
            "the shown push ids outlive a launch")
    }
}
