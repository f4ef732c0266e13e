import Foundation
import HeraldAPNs
import Testing

@Suite("APNs notifications: what is refused before sending, apns-ids and provider tokens (pure)")
struct APNsNotificationTests {
    @Test("a notification's problem: a background push at priority 10, a token that breaks the rule")
    func problems() {
        let background = APNsNotification(
            deviceToken: "abcd", topic: "com.a", pushType: .background, priority: .immediate, payload: Array("{}".utf8))
        #expect(background.problem != nil)
        #expect(APNsNotification(deviceToken: "abc", topic: "com.a", payload: Array("{}".utf8)).problem != nil)
        #expect(APNsNotification(deviceToken: "abcd", topic: "com.a", payload: Array("{}".utf8)).problem == nil)
        #expect(APNsNotification(deviceToken: "0A1b", topic: "com.a", payload: Array("{}".utf8)).problem == nil)
        for token in ["", "ab-d", "abcg", "ab cd", "abcdé"] {
            #expect(
                APNsNotification(deviceToken: token, topic: "com.a", payload: Array("{}".utf8)).problem
                    == "the device token must be hex of even length", "token \(token)")
        }
    }

    @Test("deterministic apns-ids: one per push and device, version 5")
    func deterministicIDs() throws {
        let push = UUID()
        let first = APNsNotification.deterministicID(pushID: push, deviceID: 7)
        #expect(first == APNsNotification.deterministicID(pushID: push, deviceID: 7))
        #expect(first != APNsNotification.deterministicID(pushID: push, deviceID: 8))
        #expect(first != APNsNotification.deterministicID(pushID: UUID(), deviceID: 7))
        #expect(Array(first.utf8)[14] == UInt8(ascii: "5"))
        #expect(UUID(uuidString: first) != nil)
        // RFC 9562's UUIDv5 of the name (device 7, big-endian) in the push's namespace, as Python's
        // uuid.uuid5 computes it: an apns-id never changes from one Herald version to the next, so
        // a batch sent again during an upgrade still replaces rather than stacks.
        let namespace = try #require(UUID(uuidString: "6ba7b810-9dad-11d1-80b4-00c04fd430c8"))
        #expect(
            APNsNotification.deterministicID(pushID: namespace, deviceID: 7) == "B7467464-A2B6-5CCE-910E-431679127746")
    }

    @Test(
        "provider tokens: renewed after 50 minutes, never twice within 20, early only when expired and 20 minutes old")
    func tokenPolicy() {
        let policy = APNsProviderTokenPolicy()
        #expect(policy.needsNewToken(issuedAt: nil, now: 1000))
        #expect(!policy.needsNewToken(issuedAt: 0, now: 49 * 60))
        #expect(policy.needsNewToken(issuedAt: 0, now: 50 * 60))
        #expect(!policy.needsNewToken(issuedAt: 0, now: 19 * 60, expired: true))
        #expect(policy.needsNewToken(issuedAt: 0, now: 20 * 60, expired: true))
    }
}
