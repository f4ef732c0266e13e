import Foundation
import HeraldDomain
import HeraldStore
import Testing

@testable import HeraldAPI

/// Device attributes and segments through herald-api: registration, update and import carry the
/// attributes; a push's audience filters on them, inline or by a saved segment; validate counts
/// the segment; a bad filter is a 422 that names where it went wrong.
@Suite("segments API")
struct SegmentsAPITests {
    static func ids(_ answer: APITest.Answer) -> Set<Int64> {
        Set(
            (answer["devices"] as? [[String: Any]] ?? []).compactMap {
                ($0["registration_id"] as? NSNumber)?.int64Value
            })
    }

    @Test(
        "attributes registered, updated and imported; validate sizes an inline filter and a saved segment; a push copies the segment's filter"
    )
    func segments() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            func register(_ extra: String) async throws -> (Int64, String) {
                let token = APITest.randomToken()
                let answer = try await api.call(
                    .post, "/v1/devices", key: app.serverKey,
                    json: #"{"token":"\#(token)","environment":"production",\#(extra)}"#)
                #expect(answer.status == .created, "\(answer.text)")
                return ((answer["registration_id"] as? NSNumber)?.int64Value ?? -1, token)
            }
            let (gold, goldToken) = try await register(
                #""locale":"en_US","country":"us","app_version":"5.2.0","os_version":"17.1","attributes":{"plan":"gold","score":10,"beta":true}"#
            )
            let (old, _) = try await register(#""country":"DE","app_version":"4.9","attributes":{"plan":"free"}"#)
            let shown = try await api.call(.get, "/v1/devices/\(gold)", key: app.serverKey)
            #expect(shown["country"] as? String == "US", "\(shown.text)")
            #expect(shown["app_version"] as? String == "5.2.0" && shown["os_version"] as? String == "17.1")
            let attributes = shown["attributes"] as? [String: Any]
            #expect(attributes?["plan"] as? String == "gold" && attributes?["beta"] as? Bool == true)
            #expect(shown["first_registered_at"] != nil)

            // Import: a third device with attributes, and the old one upgraded.
            let imported = APITest.randomToken()
            let importAnswer = try await api.call(
                .post, "/v1/devices/import", key: app.serverKey,
                body: """
                    {"token":"\(imported)","environment":"production","app_version":"5.3","attributes":{"plan":"gold"}}
                    {"token":"\(goldToken)","environment":"production","attributes":{"score":12,"beta":null}}
                    """, contentType: "application/x-ndjson")
            #expect(importAnswer.status == .ok, "\(importAnswer.text)")
            let afterImport = try await api.call(.get, "/v1/devices/\(gold)", key: app.serverKey)
            let merged = afterImport["attributes"] as? [String: Any]
            #expect(merged?["score"] as? Int == 12 && merged?["beta"] == nil && merged?["plan"] as? String == "gold")

            // PATCH changes attributes without a re-registration.
            let patched = try await api.call(
                .patch, "/v1/devices/\(old)", key: app.serverKey,
                json: #"{"app_version":"5.2.1","attributes":{"plan":"gold"}}"#)
            #expect(patched.status == .ok && patched["app_version"] as? String == "5.2.1", "\(patched.text)")

            // Validate sizes an inline filter.
            let filter =
                #"{"and":[{"attribute":"attributes.plan","op":"eq","value":"gold"},{"attribute":"app_version","op":"gte","value":"5.2.1"}]}"#
            let inline = try await api.call(
                .post, "/v1/pushes/validate", key: app.serverKey,
                json: #"{"audience":{"filter":\#(filter)},"notification":{"alert":{"body":"hi"}}}"#)
            #expect(inline.status == .ok, "\(inline.text)")
            #expect((inline["audience_size"] as? NSNumber)?.int64Value == 2, "the upgraded device and the imported one")

            // A saved segment, named by a push.
            let created = try await api.call(
                .post, "/v1/segments", key: app.serverKey,
                json: #"{"name":"gold on 5.2.1+","description":"upsell","filter":\#(filter)}"#)
            #expect(created.status == .created, "\(created.text)")
            let segment = created["id"] as? String ?? ""
            let twice = try await api.call(
                .post, "/v1/segments", key: app.serverKey, json: #"{"name":"gold on 5.2.1+","filter":\#(filter)}"#)
            #expect(twice.status == .conflict && twice.errorCode == "segment_name_taken")
            let listed = try await api.call(.get, "/v1/segments", key: app.serverKey)
            #expect((listed["segments"] as? [[String: Any]])?.count == 1)
            let sized = try await api.call(
                .post, "/v1/pushes/validate", key: app.serverKey,
                json: #"{"audience":{"segment_id":"\#(segment)"},"notification":{"alert":{"body":"hi"}}}"#)
            #expect((sized["audience_size"] as? NSNumber)?.int64Value == 2, "\(sized.text)")
            let narrowed = try await api.call(
                .post, "/v1/pushes/validate", key: app.serverKey,
                json:
                    #"{"audience":{"segment_id":"\#(segment)","filter":{"attribute":"country","op":"eq","value":"DE"}},"notification":{"alert":{"body":"hi"}}}"#
            )
            #expect((narrowed["audience_size"] as? NSNumber)?.int64Value == 1, "the segment AND the inline filter")

            let push = try await api.call(
                .post, "/v1/pushes", key: app.serverKey,
                json: #"{"audience":{"segment_id":"\#(segment)"},"notification":{"alert":{"body":"upsell"}}}"#)
            #expect(push.status == .accepted, "\(push.text)")
            let pushID = push["id"] as? String ?? ""
            // Changing the segment afterwards leaves the accepted push's audience as it was.
            let changed = try await api.call(
                .patch, "/v1/segments/\(segment)", key: app.serverKey,
                json: #"{"filter":{"attribute":"country","op":"eq","value":"FR"}}"#)
            #expect(changed.status == .ok, "\(changed.text)")
            let rows = try await api.database.query(
                "SELECT audience::text FROM pushes WHERE id = \(UUID(uuidString: pushID) ?? UUID())", logger: api.logger
            )
            var stored = ""
            for try await text in rows.decode(String.self) { stored = text }
            let audience = try PushAudience(json: stored)
            #expect(audience.segment?.uuidString.lowercased() == segment)
            #expect(audience.filter?.conditionCount == 2, "the filter the segment had: \(stored)")

            // Refusals name the place.
            let bad = try await api.call(
                .post, "/v1/pushes/validate", key: app.serverKey,
                json:
                    #"{"audience":{"filter":{"or":[{"attribute":"country","op":"eq","value":"DE"},{"attribute":"app_version","op":"gt","value":"newest"}]}},"notification":{"alert":{"body":"hi"}}}"#
            )
            #expect(bad.status == .unprocessableContent && bad.errorField == "audience.filter.or[1]", "\(bad.text)")
            let unknown = try await api.call(
                .post, "/v1/pushes", key: app.serverKey,
                json: #"{"audience":{"segment_id":"\#(UUID().uuidString)"},"notification":{"alert":{"body":"hi"}}}"#)
            #expect(unknown.status == .unprocessableContent && unknown.errorField == "audience.segment_id")
            let badAttributes = try await api.call(
                .post, "/v1/devices", key: app.serverKey,
                json: #"{"token":"\#(APITest.randomToken())","environment":"production","attributes":{"Bad Name":1}}"#)
            #expect(badAttributes.status == .unprocessableContent && badAttributes.errorField == "attributes.Bad Name")
            let badVersion = try await api.call(
                .post, "/v1/devices", key: app.serverKey,
                json: #"{"token":"\#(APITest.randomToken())","environment":"production","app_version":"five"}"#)
            #expect(badVersion.status == .unprocessableContent && badVersion.errorField == "app_version")

            // Another app sees none of it.
            let other = try await api.createApp(name: "other")
            #expect(try await api.call(.get, "/v1/segments/\(segment)", key: other.serverKey).status == .notFound)
            #expect(try await api.call(.delete, "/v1/segments/\(segment)", key: app.serverKey).status == .noContent)
        }
    }
}
