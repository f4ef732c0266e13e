import Crypto
import Foundation
import HTTPTypes
import HeraldCore
import HeraldDomain
import HeraldStore
import Logging
import PostgresNIO
import Testing

@testable import HeraldAPI

@Suite("Open API: apps, keys and credentials")
struct AppsAPITests {
    @Test func appLifecycleAndAdminOnlyAccess() async throws {
        try await withAPI { api in
            let app = try await api.createApp(name: "Lifecycle")
            #expect(app.serverKey.hasPrefix("hs_") && app.clientKey.hasPrefix("hc_"))

            let fetched = try await api.call(.get, "/v1/apps/\(app.id)", key: APITest.adminToken)
            #expect(
                fetched.status == .ok && fetched["name"] as? String == "Lifecycle"
                    && fetched["bundle_id"] as? String == app.bundleID)
            #expect(fetched.text.contains("hs_") == false, "a key never comes back after creation")

            let renamed = try await api.call(
                .patch, "/v1/apps/\(app.id)", key: APITest.adminToken, json: #"{"name":"Renamed"}"#)
            #expect(renamed.status == .ok && renamed["name"] as? String == "Renamed")

            // App keys cannot manage apps; no key or a wrong one is 401.
            #expect(try await api.call(.get, "/v1/apps/\(app.id)", key: app.serverKey).status == .forbidden)
            let anonymous = try await api.call(.get, "/v1/apps", key: nil)
            #expect(anonymous.status == .unauthorized && anonymous.errorCode == "missing_key")
            #expect(try await api.call(.get, "/v1/apps", key: "not-a-key").status == .unauthorized)
            // The admin token cannot send pushes.
            #expect(try await api.call(.get, "/v1/pushes", key: APITest.adminToken).status == .forbidden)

            // Paging: two apps per page, following next_cursor until the end, finds the app.
            _ = try await api.createApp(name: "Second")
            var cursor: String?
            var seen: [String] = []
            repeat {
                let page = try await api.call(
                    .get, "/v1/apps?limit=2" + (cursor.map { "&cursor=\($0)" } ?? ""), key: APITest.adminToken)
                #expect(page.status == .ok)
                let apps = page["apps"] as? [[String: Any]] ?? []
                #expect(apps.count <= 2)
                seen += apps.compactMap { $0["id"] as? String }
                cursor = page["next_cursor"] as? String
            } while cursor != nil
            #expect(seen.contains(app.id) && Set(seen).count == seen.count)

            #expect(try await api.call(.delete, "/v1/apps/\(app.id)", key: APITest.adminToken).status == .noContent)
            let gone = try await api.call(.get, "/v1/apps/\(app.id)", key: APITest.adminToken)
            #expect(gone.status == .notFound && gone.errorCode == "not_found")
            #expect(
                try await api.call(.get, "/v1/pushes", key: app.serverKey).status == .unauthorized,
                "its keys died with it")
        }
    }

    @Test func badRequestsGetPreciseErrors() async throws {
        try await withAPI { api in
            let malformed = try await api.call(.post, "/v1/apps", key: APITest.adminToken, json: #"{"name": "x", "#)
            #expect(malformed.status == .badRequest && malformed.errorCode == "invalid_json")
            let unknown = try await api.call(
                .post, "/v1/apps", key: APITest.adminToken, json: #"{"name":"x","bundle_id":"a.b","colour":"red"}"#)
            #expect(
                unknown.status == .badRequest && unknown.errorCode == "unknown_field" && unknown.errorField == "colour")
            let wrongType = try await api.call(
                .post, "/v1/apps", key: APITest.adminToken, json: #"{"name":5,"bundle_id":"a.b"}"#)
            #expect(wrongType.status == .badRequest && wrongType.errorField == "name")
            let missing = try await api.call(.post, "/v1/apps", key: APITest.adminToken, json: #"{"name":"x"}"#)
            #expect(missing.status == .badRequest && missing.errorCode == "missing_field")
            let badBundle = try await api.call(
                .post, "/v1/apps", key: APITest.adminToken, json: #"{"name":"x","bundle_id":"no spaces allowed"}"#)
            #expect(badBundle.status == .unprocessableContent && badBundle.errorField == "bundle_id")
            let badID = try await api.call(.get, "/v1/apps/not-a-uuid", key: APITest.adminToken)
            #expect(badID.status == .badRequest && badID.errorField == "appId")
            let noRoute = try await api.call(.get, "/v1/nowhere", key: APITest.adminToken)
            #expect(noRoute.status == .notFound && noRoute.errorCode == "no_such_route")
            let text = try await api.call(
                .post, "/v1/apps", key: APITest.adminToken, body: "name=x", contentType: "text/plain")
            #expect(text.status == .unsupportedMediaType && text.errorCode == "unsupported_media_type")
            let huge = String(repeating: "a", count: 2 << 20)
            let tooLarge = try await api.call(
                .post, "/v1/apps", key: APITest.adminToken, json: #"{"name":"\#(huge)","bundle_id":"a.b"}"#)
            #expect(tooLarge.status == .contentTooLarge && tooLarge.errorCode == "body_too_large")
            for answer in [malformed, unknown, wrongType, missing, badBundle, badID, noRoute, text, tooLarge] {
                #expect(answer.headers[.contentType]?.hasPrefix("application/json") == true)
            }
        }
    }

    @Test("an app's delivery policy: set, shown, checked field by field, removed with {}")
    func deliveryPolicy() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            let set = try await api.call(
                .patch, "/v1/apps/\(app.id)", key: APITest.adminToken,
                json:
                    #"{"delivery_policy":{"quiet_hours":{"start":"22:00","end":"08:30"},"default_time_zone":"Europe/Berlin","frequency_cap":{"max_pushes":3,"window_hours":24}}}"#
            )
            #expect(set.status == .ok)
            let shown = try await api.call(.get, "/v1/apps/\(app.id)", key: APITest.adminToken)
            let policy = shown["delivery_policy"] as? [String: Any]
            #expect((policy?["quiet_hours"] as? [String: String]) == ["start": "22:00", "end": "08:30"])
            #expect(policy?["default_time_zone"] as? String == "Europe/Berlin")
            #expect((policy?["frequency_cap"] as? [String: Int]) == ["max_pushes": 3, "window_hours": 24])
            let stored = try await AppRepository(client: api.database, logger: api.logger).app(
                id: try #require(UUID(uuidString: app.id)))
            #expect(
                stored?.deliveryPolicy
                    == DeliveryPolicy(
                        quietHours: .init(startMinute: 1320, endMinute: 510), defaultTimeZone: "Europe/Berlin",
                        frequencyCap: .init(maxPushes: 3, windowSeconds: 86_400)))
            for (body, field) in [
                (#"{"quiet_hours":{"start":"24:00","end":"08:00"}}"#, "delivery_policy.quiet_hours.start"),
                (#"{"quiet_hours":{"start":"22:00","end":"8:00"}}"#, "delivery_policy.quiet_hours.end"),
                (#"{"quiet_hours":{"start":"22:00","end":"22:00"}}"#, "delivery_policy.quiet_hours.end"),
                (#"{"default_time_zone":"Mars/Olympus"}"#, "delivery_policy.default_time_zone"),
                (#"{"frequency_cap":{"max_pushes":0,"window_hours":24}}"#, "delivery_policy.frequency_cap.max_pushes"),
                (
                    #"{"frequency_cap":{"max_pushes":3,"window_hours":169}}"#,
                    "delivery_policy.frequency_cap.window_hours"
                ),
            ] {
                let refused = try await api.call(
                    .patch, "/v1/apps/\(app.id)", key: APITest.adminToken, json: #"{"delivery_policy":\#(body)}"#)
                #expect(refused.status == .unprocessableContent, "\(body)")
                #expect((refused["error"] as? [String: Any])?["field"] as? String == field, "\(body)")
            }
            let cleared = try await api.call(
                .patch, "/v1/apps/\(app.id)", key: APITest.adminToken, json: #"{"delivery_policy":{}}"#)
            #expect(cleared.status == .ok && cleared["delivery_policy"] == nil)
        }
    }

    @Test func keysAreRotatedAndRevoked() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            // A client key registers devices, and may do nothing else.
            let device = try await api.call(
                .post, "/v1/devices", key: app.clientKey,
                json: #"{"token":"\#(APITest.randomToken())","environment":"sandbox"}"#)
            #expect(device.status == .created)
            let refused = try await api.call(.get, "/v1/pushes", key: app.clientKey)
            #expect(refused.status == .forbidden && refused.errorCode == "client_key_not_allowed")

            // Rotation with a grace period: both keys work until it ends.
            let rotated = try await api.call(
                .post, "/v1/apps/\(app.id)/keys/\(app.serverKeyID)/rotate", key: APITest.adminToken,
                json: #"{"grace_seconds":3600}"#)
            #expect(rotated.status == .created)
            let newKey = rotated["key"] as? String ?? ""
            let newKeyID = rotated["id"] as? String ?? ""
            #expect(newKey.hasPrefix("hs_") && newKey != app.serverKey)
            #expect(try await api.call(.get, "/v1/pushes", key: app.serverKey).status == .ok)
            #expect(try await api.call(.get, "/v1/pushes", key: newKey).status == .ok)

            // Rotation without grace: the old key stops at once.
            let again = try await api.call(.post, "/v1/apps/\(app.id)/keys/\(newKeyID)/rotate", key: APITest.adminToken)
            #expect(again.status == .created)
            #expect(try await api.call(.get, "/v1/pushes", key: newKey).status == .unauthorized)
            let newest = again["key"] as? String ?? ""
            #expect(try await api.call(.get, "/v1/pushes", key: newest).status == .ok)

            // Revocation; the key list shows prefixes and revocation times, never keys.
            let newestID = again["id"] as? String ?? ""
            #expect(
                try await api.call(.delete, "/v1/apps/\(app.id)/keys/\(newestID)", key: APITest.adminToken).status
                    == .noContent)
            #expect(try await api.call(.get, "/v1/pushes", key: newest).status == .unauthorized)
            #expect(
                try await api.call(.delete, "/v1/apps/\(app.id)/keys/\(newestID)", key: APITest.adminToken).status
                    == .notFound)
            let listed = try await api.call(.get, "/v1/apps/\(app.id)/keys", key: APITest.adminToken)
            let keys = listed["keys"] as? [[String: Any]] ?? []
            #expect(keys.count == 4 && !listed.text.contains(newest) && !listed.text.contains(app.serverKey))

            // Keys are stored as hashes only.
            let rows = try await api.database.query(
                "SELECT count(*) FROM api_keys WHERE key_prefix = \(String(newest.prefix(8))) AND key_hash = \(ByteBuffer(bytes: SecretHasher.hash(newest)))",
                logger: api.logger)
            for try await count in rows.decode(Int64.self) { #expect(count == 1) }
        }
    }

    @Test("an app has at most 100 live keys: one more answers 409 key_limit, a revoked key frees a place")
    func keysPerAppAreCapped() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            func create() async throws -> APITest.Answer {
                try await api.call(
                    .post, "/v1/apps/\(app.id)/keys", key: APITest.adminToken, json: #"{"kind":"server"}"#)
            }
            var live =
                (try await api.call(.get, "/v1/apps/\(app.id)/keys", key: APITest.adminToken)["keys"]
                as? [[String: Any]] ?? []).count
            var lastID = ""
            while live < APIHandler.keysPerApp {
                let created = try await create()
                #expect(created.status == .created)
                lastID = created["id"] as? String ?? ""
                live += 1
            }
            let refused = try await create()
            #expect(refused.status == .conflict && refused.errorCode == "key_limit", "\(refused.text)")
            #expect(
                try await api.call(.delete, "/v1/apps/\(app.id)/keys/\(lastID)", key: APITest.adminToken).status
                    == .noContent)
            #expect(try await create().status == .created)
        }
    }

    @Test func credentialsAreSealedAndNeverReturned() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            let key = P256.Signing.PrivateKey()
            let pem = key.pemRepresentation.replacingOccurrences(of: "\n", with: "\\n")
            let stored = try await api.call(
                .put, "/v1/apps/\(app.id)/credentials/production", key: APITest.adminToken,
                json: #"{"kind":"token","key_id":"ABCDE12345","team_id":"TEAM123456","private_key":"\#(pem)"}"#)
            #expect(stored.status == .ok, "\(stored.text)")
            #expect(stored["kind"] as? String == "token" && stored["key_id"] as? String == "ABCDE12345")
            #expect(!stored.text.contains("PRIVATE KEY"))

            let listed = try await api.call(.get, "/v1/apps/\(app.id)/credentials", key: APITest.adminToken)
            #expect((listed["credentials"] as? [[String: Any]])?.count == 1 && !listed.text.contains("PRIVATE"))

            // At rest the key is sealed; it opens with the master key into the .p8 text.
            let records = try await CredentialRepository(client: api.database, logger: api.logger).credentials(
                appID: UUID(uuidString: app.id)!)
            #expect(records.count == 1)
            #expect(!String(decoding: records[0].sealedSecret, as: UTF8.self).contains("PRIVATE KEY"))
            let opened = try records[0].openSecret(with: CredentialCipher(masterKeyBase64: api.masterKey))
            #expect(String(decoding: opened, as: UTF8.self) == key.pemRepresentation)

            let notAKey = try await api.call(
                .put, "/v1/apps/\(app.id)/credentials/sandbox", key: APITest.adminToken,
                json: #"{"kind":"token","key_id":"ABCDE12345","team_id":"TEAM123456","private_key":"nope"}"#)
            #expect(notAKey.status == .unprocessableContent && notAKey.errorField == "private_key")
            let shortID = try await api.call(
                .put, "/v1/apps/\(app.id)/credentials/sandbox", key: APITest.adminToken,
                json: #"{"kind":"token","key_id":"ABC","team_id":"TEAM123456","private_key":"\#(pem)"}"#)
            #expect(shortID.status == .unprocessableContent && shortID.errorField == "key_id")
            let badEnvironment = try await api.call(
                .put, "/v1/apps/\(app.id)/credentials/staging", key: APITest.adminToken,
                json: #"{"kind":"token"}"#)
            #expect(badEnvironment.status == .badRequest)

            #expect(
                try await api.call(.delete, "/v1/apps/\(app.id)/credentials/production", key: APITest.adminToken).status
                    == .noContent)
            #expect(
                try await api.call(.delete, "/v1/apps/\(app.id)/credentials/production", key: APITest.adminToken).status
                    == .notFound)
        }
    }
}

@Suite("Open API: values PostgreSQL cannot store")
struct StoredValueTests {
    @Test func nulCharactersAreABadRequestNotAServerError() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            let answer = try await api.call(
                .post, "/v1/apps/\(app.id)/keys", key: APITest.adminToken,
                json: #"{"kind":"client","name":"a\u0000b"}"#)
            #expect(answer.status == .badRequest && answer.errorCode == "invalid_text", "\(answer.text)")
            let device = try await api.call(
                .post, "/v1/devices", key: app.serverKey,
                json: #"{"token":"\#(APITest.randomToken())","environment":"production","locale":"x\u0000"}"#)
            #expect(device.status == .badRequest && device.errorCode == "invalid_text", "\(device.text)")
        }
    }
}

@Suite("Open API: an unreachable database")
struct DatabaseOutageTests {
    @Test func unreachableDatabaseAnswers503QuicklyNot500() async throws {
        let configuration = try await HeraldConfiguration.load()
        var postgres = configuration.postgres
        postgres.port = 1  // nothing listens there
        let logger = Logger(label: "test.api.outage")
        let client = try HeraldDatabase.makeClient(settings: postgres, logger: logger)
        var settings = configuration.api
        settings.port = 0
        settings.requestTimeout = .seconds(1)
        // Only the requests' own answers are under test: no replica heartbeat retrying the
        // unreachable database beside them: in one loaded run of the whole suite /readyz then
        // answered 503 without the database_unavailable code, most likely its 0.5 s running out
        // behind the heartbeat's connection attempts.
        settings.replicaHeartbeat = .zero
        var security = configuration.security
        security.adminToken = APITest.adminToken
        let server = try APIServer(
            settings: settings, security: security, database: client, postgres: postgres, logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            try await server.application.test(.live) { http in
                let api = APITest(client: http, database: client, logger: logger, masterKey: "")
                #expect(try await api.call(.get, "/healthz", key: nil).status == .ok, "alive, just not ready")
                let ready = try await api.call(.get, "/readyz", key: nil)
                #expect(
                    ready.status == .serviceUnavailable && ready.errorCode == "database_unavailable", "\(ready.text)")
                let create = try await api.call(
                    .post, "/v1/apps", key: APITest.adminToken, json: #"{"name":"x","bundle_id":"a.b"}"#)
                #expect(create.status == .serviceUnavailable, "\(create.text)")
                #expect(create.headers[HTTPField.Name("Retry-After")!] == "5")
                // An app key must be looked up first: that too answers 503 within the request
                // timeout, not after the store's minute-long deadline.
                let key = "hs_" + String(repeating: "k", count: 43)
                let push = try await api.call(
                    .post, "/v1/pushes", key: key, json: #"{"audience":{"all":true},"notification":{"alert":"x"}}"#)
                #expect(push.status == .serviceUnavailable, "\(push.text)")
                #expect(["database_unavailable", "timed_out"].contains(push.errorCode ?? ""), "\(push.text)")
            }
        }
    }
}
