import APNsSimulator
import Foundation
import HeraldHTTP2
import NIOCore
import Testing

/// Apple's request rules, over real TLS and HTTP/2, with Herald's own HTTP/2 client.
@Suite("apns-sim validates requests as APNs does")
struct ProviderAPIValidationTests {
    @Test("an accepted notification is answered 200 with its apns-id and recorded as sent")
    func acceptedNotification() async throws {
        try await withSimulator { simulator in
            let connection = try await connect(to: simulator)
            let apnsID = UUID().uuidString
            let response = try await connection.send(
                notification(
                    authorization: try providerToken(),
                    headers: [
                        HTTP2HeaderField("apns-id", apnsID), HTTP2HeaderField("apns-collapse-id", "promo-1"),
                        HTTP2HeaderField("apns-push-type", "alert"), HTTP2HeaderField("apns-priority", "5"),
                        HTTP2HeaderField("apns-expiration", "0"),
                    ]), timeout: .seconds(5))
            #expect(response.status == 200)
            #expect(response.headers["apns-id"] == apnsID)
            #expect(response.body.readableBytes == 0)
            let recorded = simulator.ledger.notifications()
            #expect(recorded.count == 1)
            #expect(recorded.first?.token == Fixture.deliverable)
            #expect(recorded.first?.apnsID == apnsID)
            #expect(recorded.first?.collapseID == "promo-1")
            #expect(recorded.first?.priority == 5)
            #expect(recorded.first?.payload == #"{"aps":{"alert":"hello"}}"#)
            await connection.close()
        }
    }

    @Test("without apns-id the answer carries a generated UUID; 32-byte and upper-case tokens are fine")
    func generatedID() async throws {
        try await withSimulator { simulator in
            let connection = try await connect(to: simulator)
            let token = try providerToken()
            let response = try await connection.send(
                notification(to: Fixture.deliverableLong.uppercased(), authorization: token), timeout: .seconds(5))
            #expect(response.status == 200)
            let id = try #require(response.headers["apns-id"])
            #expect(UUID(uuidString: id) != nil)
            #expect(simulator.ledger.notifications().first?.token == Fixture.deliverableLong)
            await connection.close()
        }
    }

    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let status: Int
        let reason: String
        var token = Fixture.deliverable
        var topic: String? = Fixture.topic
        var headers: [HTTP2HeaderField] = []
        var payload = #"{"aps":{"alert":"hello"}}"#
        var method = "POST"
        var path: String?
        var testDescription: String { "\(name) → \(status) \(reason)" }
    }

    static let cases: [Case] = [
        Case(name: "GET", status: 405, reason: "MethodNotAllowed", method: "GET"),
        Case(name: "wrong path", status: 404, reason: "BadPath", path: "/3/devices/aa11"),
        Case(name: "version 2 path", status: 404, reason: "BadPath", path: "/2/device/aa11"),
        Case(name: "no token", status: 400, reason: "MissingDeviceToken", path: "/3/device/"),
        Case(name: "odd-length token", status: 400, reason: "BadDeviceToken", token: "abc"),
        Case(name: "non-hex token", status: 400, reason: "BadDeviceToken", token: "zz11"),
        Case(name: "unknown token", status: 400, reason: "BadDeviceToken", token: "abcdef0123"),
        Case(name: "token of another app", status: 400, reason: "DeviceTokenNotForTopic", token: Fixture.ofOtherTopic),
        Case(name: "unregistered token", status: 410, reason: "Unregistered", token: Fixture.unregistered),
        Case(
            name: "two apns-topic headers", status: 400, reason: "DuplicateHeaders",
            headers: [HTTP2HeaderField("apns-topic", Fixture.topic)]),
        Case(name: "no topic", status: 400, reason: "MissingTopic", topic: nil),
        Case(name: "malformed topic", status: 400, reason: "BadTopic", topic: "com herald"),
        Case(name: "topic of another team", status: 400, reason: "TopicDisallowed", topic: "com.someone.else"),
        Case(
            name: "unknown push type", status: 400, reason: "InvalidPushType",
            headers: [HTTP2HeaderField("apns-push-type", "banner")]),
        Case(
            name: "voip without .voip topic", status: 400, reason: "InvalidPushType",
            headers: [HTTP2HeaderField("apns-push-type", "voip")]),
        Case(
            name: "live activity without its suffix", status: 400, reason: "InvalidPushType",
            headers: [HTTP2HeaderField("apns-push-type", "liveactivity")]),
        Case(
            name: "apns-id not a UUID", status: 400, reason: "BadMessageId",
            headers: [HTTP2HeaderField("apns-id", "42")]),
        Case(name: "priority 7", status: 400, reason: "BadPriority", headers: [HTTP2HeaderField("apns-priority", "7")]),
        Case(
            name: "expiration not a number", status: 400, reason: "BadExpirationDate",
            headers: [HTTP2HeaderField("apns-expiration", "tomorrow")]),
        Case(
            name: "collapse id of 65 bytes", status: 400, reason: "BadCollapseId",
            headers: [HTTP2HeaderField("apns-collapse-id", String(repeating: "c", count: 65))]),
        Case(name: "empty payload", status: 400, reason: "PayloadEmpty", payload: ""),
        Case(
            name: "payload of 4097 bytes", status: 413, reason: "PayloadTooLarge",
            payload: payload(ofSize: 4097)),
        Case(
            name: "voip payload of 5121 bytes", status: 413, reason: "PayloadTooLarge", topic: Fixture.topic + ".voip",
            headers: [HTTP2HeaderField("apns-push-type", "voip")],
            payload: payload(ofSize: 5121)),
    ]

    @Test("a request that breaks a rule gets Apple's status and reason", arguments: cases)
    func rejected(_ rule: Case) async throws {
        try await withSimulator { simulator in
            let connection = try await connect(to: simulator)
            let request = notification(
                to: rule.token, topic: rule.topic, authorization: try providerToken(),
                payload: rule.payload, headers: rule.headers, method: rule.method, path: rule.path)
            let response = try await connection.send(request, timeout: .seconds(5))
            #expect(response.status == rule.status)
            #expect(response.reason == rule.reason)
            #expect(response.headers["apns-id"] != nil)
            #expect(simulator.ledger.notifications().count == 0)
            #expect(simulator.ledger.counts.byReason[rule.reason] == 1)
            if rule.reason == "Unregistered" { #expect(response.timestamp == Fixture.unregisteredAt) }
            await connection.close()
        }
    }

    @Test("payloads at the limit pass: 4096 bytes, and 5120 for voip on a .voip topic")
    func payloadAtLimit() async throws {
        try await withSimulator { simulator in
            let connection = try await connect(to: simulator)
            let token = try providerToken()
            let alert = payload(ofSize: 4096)
            #expect(alert.utf8.count == 4096)
            let response = try await connection.send(
                notification(authorization: token, payload: alert), timeout: .seconds(5))
            #expect(response.status == 200)
            let voip = payload(ofSize: 5120)
            let voipResponse = try await connection.send(
                notification(
                    topic: Fixture.topic + ".voip", authorization: token, payload: voip,
                    headers: [HTTP2HeaderField("apns-push-type", "voip")]), timeout: .seconds(5))
            #expect(voipResponse.status == 200)
            #expect(simulator.ledger.notifications().map(\.pushType) == ["alert", "voip"])
            await connection.close()
        }
    }
}

/// An alert payload of exactly `size` bytes.
func payload(ofSize size: Int) -> String {
    let text = #"{"aps":{"alert":""# + String(repeating: "x", count: size - 20) + #""}}"#
    precondition(text.utf8.count == size)
    return text
}
