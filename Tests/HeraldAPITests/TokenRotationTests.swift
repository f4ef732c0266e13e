import Foundation
import HTTPTypes
import StoreTestSupport
import Testing

@testable import HeraldAPI

/// `previous_token` (docs/api.md): APNs gave the app a new token; the old one's registration is
/// retired at once and its profile carried over.
@Suite("Open API: a rotated token hands its registration over")
struct TokenRotationTests {
    @Test("the new token takes the old one's alias, tags, attributes and locale; the old one is retired")
    func rotationMovesTheProfile() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            let old = APITest.randomToken()
            let new = APITest.randomToken()
            let first = try await api.call(
                .post, "/v1/devices", key: app.serverKey,
                json:
                    #"{"token":"\#(old)","environment":"production","alias":"rot-1","tags":["news","sport"],"locale":"de_DE","time_zone":"Europe/Berlin","country":"DE","attributes":{"plan":"gold"},"authorization_status":"authorized"}"#
            )
            #expect(first.status == .created)
            let oldID = (first["registration_id"] as? NSNumber)?.int64Value ?? 0

            let rotated = try await api.call(
                .post, "/v1/devices", key: app.serverKey,
                json:
                    #"{"token":"\#(new)","environment":"production","previous_token":"\#(old.uppercased())","tags":["vip"],"attributes":{"level":3}}"#
            )
            #expect(rotated.status == .created)
            #expect(rotated["alias"] as? String == "rot-1")
            #expect(Set(rotated["tags"] as? [String] ?? []) == ["news", "sport", "vip"])
            #expect(rotated["locale"] as? String == "de_DE" && rotated["time_zone"] as? String == "Europe/Berlin")
            #expect(rotated["authorization_status"] as? String == "authorized")
            let attributes = rotated["attributes"] as? [String: Any]
            #expect(attributes?["plan"] as? String == "gold" && (attributes?["level"] as? NSNumber)?.intValue == 3)

            let retired = try await api.call(.get, "/v1/devices/\(oldID)", key: app.serverKey)
            #expect(
                retired["status"] as? String == "invalid" && retired["invalid_reason"] as? String == "token_rotated")
            #expect(retired["alias"] == nil && (retired["tags"] as? [String] ?? []).isEmpty)
            let byAlias = try await api.call(.get, "/v1/devices?alias=rot-1", key: app.serverKey)
            #expect(
                (byAlias["devices"] as? [[String: Any]])?.map { $0["token_prefix"] as? String } == [
                    String(new.prefix(8))
                ])
            let tagged = try await api.call(.get, "/v1/devices?tag=news", key: app.serverKey)
            #expect((tagged["devices"] as? [[String: Any]])?.count == 1)

            // Sent again (the answer was lost) after the new device changed: the old token is
            // retired already, and its stale profile is not carried over a second time.
            let newID = (rotated["registration_id"] as? NSNumber)?.int64Value ?? 0
            let changed = try await api.call(
                .patch, "/v1/devices/\(newID)", key: app.serverKey,
                json: #"{"country":"FR","attributes":{"plan":"silver"}}"#)
            #expect(changed.status == .ok, "\(changed.text)")
            let again = try await api.call(
                .post, "/v1/devices", key: app.serverKey,
                json: #"{"token":"\#(new)","environment":"production","previous_token":"\#(old)"}"#)
            #expect(again.status == .ok && again["alias"] as? String == "rot-1")
            #expect(again["country"] as? String == "FR")
            #expect((again["attributes"] as? [String: Any])?["plan"] as? String == "silver")

            let same = try await api.call(
                .post, "/v1/devices", key: app.serverKey,
                json: #"{"token":"\#(new)","environment":"production","previous_token":"\#(new)"}"#)
            #expect(same.status == .unprocessableContent && same.errorField == "previous_token")
            let malformed = try await api.call(
                .post, "/v1/devices", key: app.serverKey,
                json: #"{"token":"\#(new)","environment":"production","previous_token":"zz"}"#)
            #expect(malformed.status == .unprocessableContent || malformed.status == .badRequest)
            let unknown = try await api.call(
                .post, "/v1/devices", key: app.serverKey,
                json:
                    #"{"token":"\#(APITest.randomToken())","environment":"production","previous_token":"\#(APITest.randomToken())"}"#
            )
            #expect(unknown.status == .created && unknown["alias"] == nil, "an unknown previous token is ignored")
        }
    }

    @Test("another app's token is not retired, and a verified alias moves only with a signature for the new token")
    func rotationRespectsAppsAndSignatures() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            let other = try await api.createApp()
            let theirs = APITest.randomToken()
            #expect(
                try await api.call(
                    .post, "/v1/devices", key: other.serverKey,
                    json: #"{"token":"\#(theirs)","environment":"production","alias":"them"}"#
                ).status == .created)
            let stolen = try await api.call(
                .post, "/v1/devices", key: app.clientKey,
                json:
                    #"{"token":"\#(APITest.randomToken())","environment":"production","previous_token":"\#(theirs)"}"#
            )
            #expect(stolen.status == .created)
            let untouched = try await api.call(.get, "/v1/devices?alias=them", key: other.serverKey)
            #expect((untouched["devices"] as? [[String: Any]])?.first?["status"] as? String == "active")

            // This app verifies identities: the client key's rotation releases the old alias and
            // binds it to the new token only with the back-end's signature for that token.
            let old = APITest.randomToken()
            let bound = try await api.call(
                .post, "/v1/devices", key: app.clientKey,
                json:
                    #"{"token":"\#(old)","environment":"production","alias":"user-7","alias_signature":"\#(AccessControlTests.sign("user-7", app.identitySecret, token: old))"}"#
            )
            #expect(bound.status == .created)
            let new = APITest.randomToken()
            let unsigned = try await api.call(
                .post, "/v1/devices", key: app.clientKey,
                json: #"{"token":"\#(new)","environment":"production","previous_token":"\#(old)"}"#)
            #expect(unsigned.status == .created)
            let device = try await api.call(.get, "/v1/devices?alias=user-7", key: app.serverKey)
            #expect(
                (device["devices"] as? [[String: Any]] ?? []).isEmpty, "the old token's alias is released, not moved")
            let newer = APITest.randomToken()
            let signed = try await api.call(
                .post, "/v1/devices", key: app.clientKey,
                json:
                    #"{"token":"\#(newer)","environment":"production","previous_token":"\#(new)","alias":"user-7","alias_signature":"\#(AccessControlTests.sign("user-7", app.identitySecret, token: newer))"}"#
            )
            #expect(signed.status == .created)
            let moved = try await api.call(.get, "/v1/devices?alias=user-7", key: app.serverKey)
            #expect(
                (moved["devices"] as? [[String: Any]])?.map { $0["token_prefix"] as? String } == [
                    String(newer.prefix(8))
                ])
        }
    }
}
