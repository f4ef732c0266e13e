import Foundation
import HeraldAPNsVocabulary
import Testing

@Suite("APNs payloads, reasons, push types and the token rule (pure)")
struct APNsPayloadTests {
    func text(_ payload: APNsPayload) -> String { String(decoding: payload.encoded(), as: UTF8.self) }

    @Test("an alert string, badge and sound")
    func simple() {
        #expect(
            text(APNsPayload(alert: .text("Hi \"you\"\n"), badge: 3, sound: .named("default")))
                == #"{"aps":{"alert":"Hi \"you\"\n","badge":3,"sound":"default"}}"#)
    }

    @Test("every aps key Apple defines, in a fixed order, and custom keys beside aps")
    func everything() throws {
        var payload = APNsPayload(
            alert: .details(
                .init(
                    title: "T", subtitle: "S", body: "B", launchImage: "L.png", titleLocalizationKey: "TK",
                    titleLocalizationArguments: ["a"], subtitleLocalizationKey: "SK",
                    subtitleLocalizationArguments: ["b"],
                    localizationKey: "K", localizationArguments: ["c", "d"])))
        payload.sound = .critical(name: "alarm.caf", volume: 0.5)
        payload.threadID = "thread"
        payload.category = "INVITE"
        payload.contentAvailable = true
        payload.mutableContent = true
        payload.targetContentID = "window"
        payload.interruptionLevel = .timeSensitive
        payload.relevanceScore = 0.75
        payload.filterCriteria = "work"
        payload.custom = ["orderID": 42, "nested": ["b": true, "a": .null], "aps": "ignored"]
        let json = text(payload)
        #expect(
            json
                == #"{"aps":{"alert":{"title":"T","subtitle":"S","body":"B","launch-image":"L.png","title-loc-key":"TK","title-loc-args":["a"],"subtitle-loc-key":"SK","subtitle-loc-args":["b"],"loc-key":"K","loc-args":["c","d"]},"sound":{"critical":1,"name":"alarm.caf","volume":0.5},"thread-id":"thread","category":"INVITE","content-available":1,"mutable-content":1,"target-content-id":"window","interruption-level":"time-sensitive","relevance-score":0.75,"filter-criteria":"work"},"nested":{"a":null,"b":true},"orderID":42}"#
        )
        // And it is JSON that a standard parser reads back.
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect((object["aps"] as? [String: Any])?["badge"] == nil)
        #expect(object["orderID"] as? Int == 42)
    }

    @Test("Live Activity keys")
    func liveActivity() {
        var payload = APNsPayload()
        payload.liveActivity = .init(
            event: .update, contentState: ["score": "2-1"], timestamp: 1_700_000_000, staleDate: 1_700_000_600)
        #expect(
            text(payload)
                == #"{"aps":{"event":"update","content-state":{"score":"2-1"},"timestamp":1700000000,"stale-date":1700000600}}"#
        )
    }

    @Test("payloads over Apple's limit are refused before sending: 4096 bytes, 5120 for voip")
    func sizeLimits() throws {
        let fits = APNsPayload(alert: .text(String(repeating: "x", count: 4096 - 20)))
        #expect(try fits.validated(for: .alert).count == 4096)
        let over = APNsPayload(alert: .text(String(repeating: "x", count: 4097 - 20)))
        #expect(throws: APNsPayloadTooLarge.self) { try over.validated(for: .alert) }
        #expect(try over.validated(for: .voip).count == 4097)
    }

    @Test("reasons: Apple's names, unknown ones kept, and what a sender does about each")
    func reasons() {
        #expect(APNsReason("BadDeviceToken") == .badDeviceToken)
        #expect(APNsReason("Unregistered").description == "Unregistered")
        #expect(APNsReason("SomethingNew") == .unknown("SomethingNew"))
        #expect(APNsReason.tooManyRequests.disposition == .retryable)
        #expect(APNsReason.serviceUnavailable.disposition == .retryable)
        #expect(APNsReason.internalServerError.disposition == .retryable)
        #expect(APNsReason.unregistered.disposition == .permanent)
        #expect(APNsReason.payloadTooLarge.disposition == .permanent)
        #expect(APNsReason.expiredProviderToken.disposition == .credential)
        #expect(APNsReason.unregistered.invalidatesToken)
        #expect(APNsReason.deviceTokenNotForTopic.invalidatesToken)
        #expect(!APNsReason.tooManyRequests.invalidatesToken)
    }

    @Test("push types: topics and priorities")
    func pushTypes() {
        #expect(APNsPushType.voip.topic(forBundleID: "com.a") == "com.a.voip")
        #expect(APNsPushType.liveactivity.topic(forBundleID: "com.a") == "com.a.push-type.liveactivity")
        #expect(APNsPushType.background.defaultPriority == .conserve)
        // The token rule every sender applies: hexadecimal of even, non-zero length, any case.
        #expect(APNsDeviceToken.isWellFormed("abcd") && APNsDeviceToken.isWellFormed("0A1b"))
        for token in ["", "abc", "ab-d", "abcg", "ab cd", "abcdé"] {
            #expect(!APNsDeviceToken.isWellFormed(token), "token \(token)")
        }
    }
}
