import Crypto
import Foundation
import HTTPTypes
import HeraldAccess
import HeraldStore
import PostgresNIO
import Testing

@testable import HeraldAPI

/// Who may do what: client keys that cannot impersonate users, scoped server keys, per-app admin
/// keys, separate rate-limit buckets, and the audit log that records who did it.
@Suite("Open API: access control")
struct AccessControlTests {
    /// A v2 signature of `alias` for the device `token` (hexadecimal), valid for an hour from now
    /// (`expiresIn` seconds).
    static func sign(_ alias: String, _ secret: String, token: String, expiresIn: Int64 = 3600) -> String {
        AliasSignature.sign(
            alias: alias, token: bytes(hexadecimal: token), expires: Int64(Date().timeIntervalSince1970) + expiresIn,
            secret: Array(secret.utf8))
    }

    static func bytes(hexadecimal: String) -> [UInt8] {
        let digits = Array(hexadecimal.utf8)
        return stride(from: 0, to: digits.count - 1, by: 2).map { index in
            UInt8(String(decoding: digits[index...index + 1], as: UTF8.self), radix: 16) ?? 0
        }
    }

    @Test("a client key cannot put its phone on someone else's alias, nor touch devices by registration id")
    func clientKeysCannotImpersonate() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            #expect(app.identitySecret.hasPrefix("hid_"))
            let victimToken = APITest.randomToken()
            let victim = try await api.register(app, token: victimToken, alias: "user-42", tags: ["vip"])

            // The attacker extracted the client key and registers their own phone.
            let attackerToken = APITest.randomToken()
            let own = try await api.call(
                .post, "/v1/devices", key: app.clientKey,
                json: #"{"token":"\#(attackerToken)","environment":"production"}"#)
            #expect(own.status == .created)
            #expect(own["registration_id"] == nil, "a client key is never shown a registration id")

            // Binding user-42 takes the back-end's signature.
            let unsigned = try await api.call(
                .post, "/v1/devices", key: app.clientKey,
                json: #"{"token":"\#(attackerToken)","environment":"production","alias":"user-42"}"#)
            #expect(unsigned.status == .forbidden && unsigned.errorCode == "alias_signature_required")
            let forged = try await api.call(
                .patch, "/v1/devices/by-token/\(attackerToken)", key: app.clientKey,
                json:
                    #"{"alias":"user-42","alias_signature":"\#(Self.sign("user-41", app.identitySecret, token: attackerToken))"}"#
            )
            #expect(forged.status == .forbidden && forged.errorCode == "alias_signature_invalid")
            let wrongSecret = try await api.call(
                .patch, "/v1/devices/by-token/\(attackerToken)", key: app.clientKey,
                json:
                    #"{"alias":"user-42","alias_signature":"\#(Self.sign("user-42", "hid_guess", token: attackerToken))"}"#
            )
            #expect(wrongSecret.status == .forbidden && wrongSecret.errorCode == "alias_signature_invalid")
            let stillAnonymous = try await api.call(.get, "/v1/devices/by-token/\(attackerToken)", key: app.serverKey)
            #expect(stillAnonymous.status == .ok && stillAnonymous["alias"] == nil)
            let aliasDevices = try await api.call(.get, "/v1/devices?alias=user-42", key: app.serverKey)
            #expect((aliasDevices["devices"] as? [[String: Any]])?.count == 1)

            // The sequential registration id opens nothing to a client key.
            let patchByID = try await api.call(
                .patch, "/v1/devices/\(victim)", key: app.clientKey, json: #"{"add_tags":["mine"]}"#)
            #expect(patchByID.status == .forbidden && patchByID.errorCode == "address_by_token")
            for method in [HTTPRequest.Method.get, .delete] {
                let byID = try await api.call(method, "/v1/devices/\(victim)", key: app.clientKey)
                #expect(byID.status == .forbidden && byID.errorCode == "client_key_not_allowed")
            }
            let victimDevice = try await api.call(.get, "/v1/devices/\(victim)", key: app.serverKey)
            #expect(victimDevice["tags"] as? [String] == ["vip"] && victimDevice["alias"] as? String == "user-42")

            // The real user's app, with its back-end's signature, binds the alias.
            let userToken = APITest.randomToken()
            let signature = Self.sign("user-43", app.identitySecret, token: userToken)
            let legitimate = try await api.call(
                .post, "/v1/devices", key: app.clientKey,
                json:
                    #"{"token":"\#(userToken)","environment":"production","alias":"user-43","alias_signature":"\#(signature.uppercased().replacingOccurrences(of: "V2.", with: "v2."))"}"#
            )
            #expect(legitimate.status == .created && legitimate["alias"] as? String == "user-43", "\(legitimate.text)")
            // The signature is the device's: seen on the wire, it binds no other phone to user-43.
            let replayed = try await api.call(
                .patch, "/v1/devices/by-token/\(attackerToken)", key: app.clientKey,
                json: #"{"alias":"user-43","alias_signature":"\#(signature)"}"#)
            #expect(replayed.status == .forbidden && replayed.errorCode == "alias_signature_invalid")
            // Nor does one past its expiry, one that would last past 30 days, or the old form.
            let expired = try await api.call(
                .patch, "/v1/devices/by-token/\(userToken)", key: app.clientKey,
                json:
                    #"{"alias":"user-43","alias_signature":"\#(Self.sign("user-43", app.identitySecret, token: userToken, expiresIn: -1))"}"#
            )
            #expect(expired.status == .forbidden && expired.errorCode == "alias_signature_expired")
            let lasting = try await api.call(
                .patch, "/v1/devices/by-token/\(userToken)", key: app.clientKey,
                json:
                    #"{"alias":"user-43","alias_signature":"\#(Self.sign("user-43", app.identitySecret, token: userToken, expiresIn: 31 * 86_400))"}"#
            )
            #expect(lasting.status == .forbidden && lasting.errorCode == "alias_signature_invalid")
            let v1 = AliasSignature.sign(alias: "user-43", secret: Array(app.identitySecret.utf8))
            let oldForm = try await api.call(
                .patch, "/v1/devices/by-token/\(userToken)", key: app.clientKey,
                json: #"{"alias":"user-43","alias_signature":"\#(v1)"}"#)
            #expect(oldForm.status == .forbidden && oldForm.errorCode == "alias_signature_invalid")
            // An app that takes the old form (those from before v2; only the admin token turns it on).
            let adminKey =
                try await api.call(
                    .post, "/v1/apps/\(app.id)/keys", key: APITest.adminToken, json: #"{"kind":"admin"}"#)["key"]
                as? String
            let byAppAdmin = try await api.call(
                .patch, "/v1/apps/\(app.id)", key: adminKey ?? "", json: #"{"alias_signatures_v1":true}"#)
            #expect(byAppAdmin.status == .forbidden && byAppAdmin.errorCode == "admin_only")
            let takesV1 = try await api.call(
                .patch, "/v1/apps/\(app.id)", key: APITest.adminToken, json: #"{"alias_signatures_v1":true}"#)
            #expect(takesV1.status == .ok && takesV1["alias_signatures_v1"] as? Bool == true)
            let oldFormTaken = try await api.call(
                .patch, "/v1/devices/by-token/\(userToken)", key: app.clientKey,
                json: #"{"alias":"user-43","alias_signature":"\#(v1)"}"#)
            #expect(oldFormTaken.status == .ok)
            _ = try await api.call(
                .patch, "/v1/apps/\(app.id)", key: APITest.adminToken, json: #"{"alias_signatures_v1":false}"#)

            // A client changes and deletes the device whose token it holds, and only that one
            // (with a tag its app lets clients set: a new app names none).
            _ = try await api.call(
                .patch, "/v1/apps/\(app.id)", key: APITest.adminToken, json: #"{"client_tags":["news"]}"#)
            let tagged = try await api.call(
                .patch, "/v1/devices/by-token/\(attackerToken)", key: app.clientKey, json: #"{"add_tags":["news"]}"#)
            #expect(tagged.status == .ok && tagged["tags"] as? [String] == ["news"] && tagged["registration_id"] == nil)
            let unknown = try await api.call(
                .delete, "/v1/devices/by-token/\(APITest.randomToken())", key: app.clientKey)
            #expect(unknown.status == .notFound)
            let other = try await api.createApp()
            let crossApp = try await api.call(.get, "/v1/devices/by-token/\(victimToken)", key: other.clientKey)
            #expect(crossApp.status == .notFound, "another app's client key does not find this app's device")
            let gone = try await api.call(.delete, "/v1/devices/by-token/\(attackerToken)", key: app.clientKey)
            #expect(gone.status == .noContent)
            let victimStays = try await api.call(.get, "/v1/devices/by-token/\(victimToken)", key: app.serverKey)
            #expect(victimStays.status == .ok)
        }
    }

    @Test("client tags, the identity secret's rotation, and apps that keep the old rules")
    func clientRulesPerApp() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            let limited = try await api.call(
                .patch, "/v1/apps/\(app.id)", key: APITest.adminToken, json: #"{"client_tags":["news","sport"]}"#)
            #expect(limited.status == .ok && limited["client_tags"] as? [String] == ["news", "sport"])
            let token = APITest.randomToken()
            let refused = try await api.call(
                .post, "/v1/devices", key: app.clientKey,
                json: #"{"token":"\#(token)","environment":"production","tags":["news","vip"]}"#)
            #expect(refused.status == .forbidden && refused.errorCode == "tag_not_allowed")
            let allowed = try await api.call(
                .post, "/v1/devices", key: app.clientKey,
                json: #"{"token":"\#(token)","environment":"production","tags":["news"]}"#)
            #expect(allowed.status == .created)
            // A tag the back-end set is not the client's to remove either; the server key may.
            _ = try await api.call(
                .patch, "/v1/devices/by-token/\(token)", key: app.serverKey, json: #"{"add_tags":["vip"]}"#)
            let removeVIP = try await api.call(
                .patch, "/v1/devices/by-token/\(token)", key: app.clientKey, json: #"{"remove_tags":["vip"]}"#)
            #expect(removeVIP.status == .forbidden && removeVIP.errorCode == "tag_not_allowed")
            let any = try await api.call(
                .patch, "/v1/apps/\(app.id)", key: APITest.adminToken, json: #"{"client_tags_unrestricted":true}"#)
            #expect(any.status == .ok && any["client_tags"] == nil)

            // Rotation: the old secret verifies during its grace period only.
            let rotated = try await api.call(
                .post, "/v1/apps/\(app.id)/identity-secret", key: APITest.adminToken, json: #"{"grace_seconds":3600}"#)
            let newSecret = rotated["identity_secret"] as? String ?? ""
            #expect(rotated.status == .created && newSecret.hasPrefix("hid_") && newSecret != app.identitySecret)
            for secret in [app.identitySecret, newSecret] {
                let bound = try await api.call(
                    .patch, "/v1/devices/by-token/\(token)", key: app.clientKey,
                    json: #"{"alias":"carol","alias_signature":"\#(Self.sign("carol", secret, token: token))"}"#)
                #expect(bound.status == .ok, "\(bound.text)")
            }
            _ = try await api.call(
                .post, "/v1/apps/\(app.id)/identity-secret", key: APITest.adminToken, json: #"{"grace_seconds":0}"#)
            let stale = try await api.call(
                .patch, "/v1/devices/by-token/\(token)", key: app.clientKey,
                json: #"{"alias":"carol","alias_signature":"\#(Self.sign("carol", newSecret, token: token))"}"#)
            #expect(stale.status == .forbidden && stale.errorCode == "alias_signature_invalid")
            let unbind = try await api.call(
                .patch, "/v1/devices/by-token/\(token)", key: app.clientKey, json: #"{"alias":""}"#)
            #expect(unbind.status == .ok && unbind["alias"] == nil, "a client may always unbind its own device")

            // An app from before the rules keeps working as it did until an operator moves it on.
            let legacy = try await api.call(
                .patch, "/v1/apps/\(app.id)", key: APITest.adminToken,
                json: #"{"identity_verification":false,"legacy_client_access":true}"#)
            #expect(
                legacy["identity_verification"] as? Bool == false && legacy["legacy_client_access"] as? Bool == true)
            let old = try await api.call(
                .post, "/v1/devices", key: app.clientKey,
                json: #"{"token":"\#(APITest.randomToken())","environment":"production","alias":"dave"}"#)
            let id = (old["registration_id"] as? NSNumber)?.int64Value ?? 0
            #expect(old.status == .created && id > 0)
            let byID = try await api.call(
                .patch, "/v1/devices/\(id)", key: app.clientKey, json: #"{"add_tags":["sport"]}"#)
            #expect(byID.status == .ok)
        }
    }

    @Test("client keys set only the custom attributes and tags their app allows; a new app allows none")
    func clientAttributesPerApp() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            let fresh = try await api.call(.get, "/v1/apps/\(app.id)", key: APITest.adminToken)
            #expect(fresh["client_tags"] as? [String] == [] && fresh["client_attributes"] as? [String] == [])
            let token = APITest.randomToken()
            for (body, code) in [
                (#"{"token":"\#(token)","environment":"production","tags":["news"]}"#, "tag_not_allowed"),
                (
                    #"{"token":"\#(token)","environment":"production","attributes":{"plan":"gold"}}"#,
                    "attribute_not_allowed"
                ),
            ] {
                let refused = try await api.call(.post, "/v1/devices", key: app.clientKey, json: body)
                #expect(refused.status == .forbidden && refused.errorCode == code, "\(refused.text)")
            }
            let named = try await api.call(
                .patch, "/v1/apps/\(app.id)", key: APITest.adminToken, json: #"{"client_attributes":["locale"]}"#)
            #expect(named.status == .ok && named["client_attributes"] as? [String] == ["locale"])
            let registered = try await api.call(
                .post, "/v1/devices", key: app.clientKey,
                json: #"{"token":"\#(token)","environment":"production","attributes":{"locale":"de_DE"}}"#)
            #expect(registered.status == .created, "\(registered.text)")
            // What the back-end sets (segments trust it) is not the client's to change or remove.
            let server = try await api.call(
                .patch, "/v1/devices/by-token/\(token)", key: app.serverKey,
                json: #"{"attributes":{"lifetime_value":120}}"#)
            #expect(server.status == .ok)
            for attributes in [
                #"{"lifetime_value":9999}"#, #"{"lifetime_value":null}"#, #"{"locale":"fr_FR","plan":"x"}"#,
            ] {
                let refused = try await api.call(
                    .patch, "/v1/devices/by-token/\(token)", key: app.clientKey, json: #"{"attributes":\#(attributes)}"#
                )
                #expect(refused.status == .forbidden && refused.errorCode == "attribute_not_allowed", "\(attributes)")
            }
            let device = try await api.call(.get, "/v1/devices/by-token/\(token)", key: app.serverKey)
            let stored = device["attributes"] as? [String: Any]
            #expect(stored?["lifetime_value"] as? Int == 120 && stored?["locale"] as? String == "de_DE")
            let bad = try await api.call(
                .patch, "/v1/apps/\(app.id)", key: APITest.adminToken, json: #"{"client_attributes":["Not A Name"]}"#)
            #expect(bad.status == .unprocessableContent && bad.errorField == "client_attributes", "\(bad.text)")
            let any = try await api.call(
                .patch, "/v1/apps/\(app.id)", key: APITest.adminToken,
                json: #"{"client_attributes_unrestricted":true}"#)
            #expect(any.status == .ok && any["client_attributes"] == nil)
            let open = try await api.call(
                .patch, "/v1/devices/by-token/\(token)", key: app.clientKey, json: #"{"attributes":{"plan":"x"}}"#)
            #expect(open.status == .ok)
        }
    }

    @Test("scoped server keys, per-app admin keys, and the global admin")
    func scopesAndAdminKeys() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            let other = try await api.createApp()
            let statsOnly = try await api.call(
                .post, "/v1/apps/\(app.id)/keys", key: APITest.adminToken,
                json: #"{"kind":"server","name":"dashboard","scopes":["stats:read"]}"#)
            #expect(statsOnly.status == .created && statsOnly["scopes"] as? [String] == ["stats:read"])
            let statsKey = statsOnly["key"] as? String ?? ""
            #expect(try await api.call(.get, "/v1/stats", key: statsKey).status == .ok)
            let push = try await api.call(
                .post, "/v1/pushes", key: statsKey,
                json: #"{"audience":{"all":true},"notification":{"alert":{"body":"hi"}}}"#)
            #expect(push.status == .forbidden && push.errorCode == "scope_missing")
            let devices = try await api.call(.get, "/v1/devices", key: statsKey)
            #expect(devices.status == .forbidden && devices.errorCode == "scope_missing")
            let clientScopes = try await api.call(
                .post, "/v1/apps/\(app.id)/keys", key: APITest.adminToken,
                json: #"{"kind":"client","scopes":["stats:read"]}"#)
            #expect(clientScopes.status == .unprocessableContent && clientScopes.errorField == "scopes")

            // The app's admin key manages that app, and nothing else.
            let admin = try await api.call(
                .post, "/v1/apps/\(app.id)/keys", key: APITest.adminToken, json: #"{"kind":"admin","name":"team"}"#)
            let adminKey = admin["key"] as? String ?? ""
            #expect(admin.status == .created && adminKey.hasPrefix("ha_"))
            #expect(try await api.call(.get, "/v1/apps/\(app.id)", key: adminKey).status == .ok)
            let madeByTeam = try await api.call(
                .post, "/v1/apps/\(app.id)/keys", key: adminKey, json: #"{"kind":"server"}"#)
            #expect(madeByTeam.status == .created)
            let otherApp = try await api.call(.get, "/v1/apps/\(other.id)/keys", key: adminKey)
            #expect(otherApp.status == .forbidden && otherApp.errorCode == "other_app")
            let listApps = try await api.call(.get, "/v1/apps", key: adminKey)
            #expect(listApps.status == .forbidden && listApps.errorCode == "admin_only")
            let pushes = try await api.call(.get, "/v1/pushes", key: adminKey)
            #expect(pushes.status == .forbidden && pushes.errorCode == "server_key_required")
            let serverOnAdmin = try await api.call(.get, "/v1/apps/\(app.id)/keys", key: app.serverKey)
            #expect(serverOnAdmin.status == .forbidden && serverOnAdmin.errorCode == "admin_only")
            // What only the admin token does: delete the app, turn legacy client access back on.
            let deleted = try await api.call(.delete, "/v1/apps/\(app.id)", key: adminKey)
            #expect(deleted.status == .forbidden && deleted.errorCode == "admin_only")
            let loosened = try await api.call(
                .patch, "/v1/apps/\(app.id)", key: adminKey, json: #"{"legacy_client_access":true}"#)
            #expect(loosened.status == .forbidden && loosened.errorCode == "admin_only")
            let tightened = try await api.call(
                .patch, "/v1/apps/\(app.id)", key: adminKey, json: #"{"legacy_client_access":false}"#)
            #expect(tightened.status == .ok)
            #expect(try await api.call(.get, "/v1/apps/\(app.id)", key: adminKey).status == .ok, "still there")
        }
    }

    @Test("client keys draw on their own rate-limit bucket")
    func clientKeysHaveTheirOwnBucket() async throws {
        try await withAPI(
            rateLimitPerSecond: 1, burst: 3,
            configure: { settings in
                settings.clientRateLimitPerSecond = 1
                settings.clientRateLimitBurst = 1
            }, rateLimitClock: StoppedClock().clock
        ) { api in
            let app = try await api.createApp()
            // A burst of one: the first registration is answered (400, malformed, so no database
            // write), the second refused.
            let first = try await api.call(.post, "/v1/devices", key: app.clientKey, json: #"{"token":"#)
            let second = try await api.call(.post, "/v1/devices", key: app.clientKey, json: #"{"token":"#)
            #expect(first.status == .badRequest && second.status == .tooManyRequests, "\(second.text)")
            let server = try await api.call(.get, "/v1/stats", key: app.serverKey)
            #expect(server.status == .ok, "the client keys' empty bucket leaves the back-end its own")
        }
    }

    @Test("the audit log records who did what, from where, and nothing secret")
    func auditLog() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            let other = try await api.createApp()
            let requestID = "audit-\(UUID().uuidString.prefix(8))"
            let created = try await api.call(
                .post, "/v1/pushes", key: app.serverKey,
                json: #"{"audience":{"all":true},"notification":{"alert":{"body":"hi"}}}"#,
                headers: [.init("X-Request-Id")!: requestID])
            let pushID = created["id"] as? String ?? ""
            #expect(created.status == .accepted)
            let status = try await api.call(.get, "/v1/pushes/\(pushID)", key: app.serverKey)
            #expect(status["created_by_key_id"] as? String == app.serverKeyID)
            _ = try await api.call(.delete, "/v1/pushes/\(pushID)", key: app.serverKey)
            let key = try await api.call(
                .post, "/v1/apps/\(app.id)/keys", key: APITest.adminToken, json: #"{"kind":"server"}"#)
            let secret = key["key"] as? String ?? "-"
            _ = try await api.call(
                .delete, "/v1/apps/\(app.id)/keys/\(key["id"] as? String ?? "")", key: APITest.adminToken)

            let log = try await api.call(.get, "/v1/apps/\(app.id)/audit-events", key: APITest.adminToken)
            #expect(log.status == .ok)
            let events = log["events"] as? [[String: Any]] ?? []
            let actions = events.compactMap { $0["action"] as? String }
            #expect(
                actions == ["app.created", "push.created", "push.canceled", "key.created", "key.revoked"], "\(actions)")
            let pushEntry = events.first { $0["action"] as? String == "push.created" } ?? [:]
            #expect(pushEntry["key_id"] as? String == app.serverKeyID && pushEntry["target"] as? String == pushID)
            #expect(
                pushEntry["request_id"] as? String == requestID && pushEntry["source_address"] as? String == "127.0.0.1"
            )
            #expect(events.first?["actor"] as? String == "admin")
            for secretText in [secret, app.serverKey, app.clientKey, app.identitySecret, APITest.adminToken] {
                #expect(!log.text.contains(secretText), "the audit log holds no secret")
            }

            // Another app's admin key reads nothing of it; the log cannot be changed.
            let otherAdmin = try await api.call(
                .post, "/v1/apps/\(other.id)/keys", key: APITest.adminToken, json: #"{"kind":"admin"}"#)
            let refused = try await api.call(
                .get, "/v1/apps/\(app.id)/audit-events", key: otherAdmin["key"] as? String ?? "")
            #expect(refused.status == .forbidden)
            let appID = try #require(UUID(uuidString: app.id))
            await #expect(throws: PSQLError.self) {
                try await api.database.query(
                    "UPDATE audit_events SET action = 'nothing' WHERE app_id = \(appID)", logger: api.logger)
            }
            await #expect(throws: PSQLError.self) {
                try await api.database.query("DELETE FROM audit_events WHERE app_id = \(appID)", logger: api.logger)
            }
        }
    }
}
