import Foundation
import HTTPTypes
import HeraldStore
import Logging
import PostgresNIO
import StoreTestSupport
import Testing

@testable import HeraldAPI

@Suite("Open API: devices")
struct DevicesAPITests {
    @Test func registrationIsStableAndReactivates() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            let token = APITest.randomToken()
            let first = try await api.call(
                .post, "/v1/devices", key: app.serverKey,
                json:
                    #"{"token":"\#(token)","environment":"production","alias":"alice","tags":["news"],"locale":"de_DE","time_zone":"Europe/Berlin"}"#
            )
            #expect(first.status == .created)
            let id = (first["registration_id"] as? NSNumber)?.int64Value ?? 0
            #expect(
                first["topic"] as? String == app.bundleID && first["token_prefix"] as? String == String(token.prefix(8))
            )
            #expect(!first.text.contains(token), "the whole token is never returned")

            // APNs said the token is dead; the phone registers it again: same id, active, tags kept and added.
            try await markInvalid([id], reason: "BadDeviceToken", client: api.database, logger: api.logger)
            let invalid = try await api.call(.get, "/v1/devices/\(id)", key: app.serverKey)
            #expect(
                invalid["status"] as? String == "invalid" && invalid["invalid_reason"] as? String == "BadDeviceToken")
            let again = try await api.call(
                .post, "/v1/devices", key: app.serverKey,
                json: #"{"token":"\#(token.uppercased())","environment":"sandbox","tags":["sport"]}"#)
            #expect(again.status == .ok)
            #expect((again["registration_id"] as? NSNumber)?.int64Value == id)
            #expect(again["status"] as? String == "active" && again["environment"] as? String == "sandbox")
            #expect(Set(again["tags"] as? [String] ?? []) == ["news", "sport"] && again["alias"] as? String == "alice")

            let badToken = try await api.call(
                .post, "/v1/devices", key: app.serverKey, json: #"{"token":"xyz","environment":"production"}"#)
            #expect(badToken.status == .unprocessableContent && badToken.errorField == "token")
            let badZone = try await api.call(
                .post, "/v1/devices", key: app.serverKey,
                json: #"{"token":"\#(APITest.randomToken())","environment":"production","time_zone":"Mars/Olympus"}"#)
            #expect(badZone.status == .unprocessableContent && badZone.errorField == "time_zone")
            let badEnvironment = try await api.call(
                .post, "/v1/devices", key: app.serverKey,
                json: #"{"token":"\#(APITest.randomToken())","environment":"staging"}"#)
            #expect(badEnvironment.status == .badRequest)

            // A device may only name its own app's topic: a client key cannot put a token
            // under another app's bundle id (whose credential would then be used for it).
            let otherTopic = try await api.call(
                .post, "/v1/devices", key: app.clientKey,
                json: #"{"token":"\#(APITest.randomToken())","environment":"production","topic":"com.someone.else"}"#)
            #expect(otherTopic.status == .unprocessableContent && otherTopic.errorField == "topic")
            let lookalike = try await api.call(
                .post, "/v1/devices", key: app.clientKey,
                json: #"{"token":"\#(APITest.randomToken())","environment":"production","topic":"\#(app.bundleID)x"}"#)
            #expect(lookalike.status == .unprocessableContent && lookalike.errorField == "topic")
            let voip = try await api.call(
                .post, "/v1/devices", key: app.clientKey,
                json:
                    #"{"token":"\#(APITest.randomToken())","environment":"production","topic":"\#(app.bundleID).voip"}"#
            )
            #expect(voip.status == .created && voip["topic"] as? String == app.bundleID + ".voip")

            // Lengths count as the database counts them (code points): 100 accented letters
            // written as e and a combining accent are 200 for PostgreSQL's 128-character limit.
            // The API used to let them through and answer 500 when the database refused.
            let accented = String(repeating: "e\u{301}", count: 100)
            let long = try await api.call(
                .post, "/v1/devices", key: app.serverKey,
                json: #"{"token":"\#(APITest.randomToken())","environment":"production","alias":"\#(accented)"}"#)
            #expect(long.status == .unprocessableContent && long.errorField == "alias")
            let fits = String(repeating: "e\u{301}", count: 64)
            let ok = try await api.call(
                .post, "/v1/devices", key: app.serverKey,
                json: #"{"token":"\#(APITest.randomToken())","environment":"production","alias":"\#(fits)"}"#)
            #expect(ok.status == .created)
        }
    }

    @Test("a CHECK constraint the API's checks missed names its column")
    func checkConstraintColumn() {
        #expect(ErrorResponseMiddleware.column(ofCheck: "devices_alias_check") == "alias")
        #expect(ErrorResponseMiddleware.column(ofCheck: "device_tags_tag_check") == "tag")
        #expect(ErrorResponseMiddleware.column(ofCheck: "apps_name_check") == "name")
        #expect(ErrorResponseMiddleware.column(ofCheck: "pushes_pkey") == nil)
    }

    @Test func aliasesTagsLookupsAndDeletion() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            let a = try await api.register(app, alias: "bob", tags: ["vip"])
            let b = try await api.register(app, alias: "bob")
            let c = try await api.register(app, tags: ["vip", "beta"])

            let byAlias = try await api.call(.get, "/v1/devices?alias=bob", key: app.serverKey)
            #expect(
                Set(
                    (byAlias["devices"] as? [[String: Any]] ?? []).compactMap {
                        ($0["registration_id"] as? NSNumber)?.int64Value
                    }) == [a, b])
            let byTag = try await api.call(.get, "/v1/devices?tag=vip&limit=1", key: app.serverKey)
            #expect((byTag["devices"] as? [[String: Any]])?.count == 1)
            let cursor = (byTag["next_cursor"] as? NSNumber)?.int64Value ?? 0
            let nextPage = try await api.call(.get, "/v1/devices?tag=vip&limit=1&cursor=\(cursor)", key: app.serverKey)
            #expect(
                ((nextPage["devices"] as? [[String: Any]])?.first?["registration_id"] as? NSNumber)?.int64Value == c)

            let changed = try await api.call(
                .patch, "/v1/devices/\(a)", key: app.serverKey,
                json: #"{"alias":"","add_tags":["gold"],"remove_tags":["vip"]}"#)
            #expect(changed.status == .ok && changed["alias"] == nil && changed["tags"] as? [String] == ["gold"])
            let tooMany = try await api.call(
                .patch, "/v1/devices/\(a)", key: app.serverKey,
                json: #"{"add_tags":[\#((0..<100).map { "\"t\($0)\"" }.joined(separator: ","))]}"#)
            #expect(tooMany.status == .unprocessableContent && tooMany.errorField == "tags", "101 tags is one too many")

            #expect(try await api.call(.delete, "/v1/devices/\(b)", key: app.clientKey).status == .forbidden)
            #expect(try await api.call(.delete, "/v1/devices/\(b)", key: app.serverKey).status == .noContent)
            #expect(try await api.call(.get, "/v1/devices/\(b)", key: app.serverKey).status == .notFound)
        }
    }

    @Test func appsSeeOnlyTheirOwnDevices() async throws {
        try await withAPI { api in
            let mine = try await api.createApp()
            let theirs = try await api.createApp()
            let device = try await api.register(mine, alias: "carol", tags: ["private"])
            for (method, json) in [(HTTPRequest.Method.get, nil), (.patch, #"{"alias":"mallory"}"#), (.delete, nil)]
                as [(HTTPRequest.Method, String?)]
            {
                let answer = try await api.call(method, "/v1/devices/\(device)", key: theirs.serverKey, json: json)
                #expect(answer.status == .notFound, "\(method) of another app's device")
            }
            #expect(
                (try await api.call(.get, "/v1/devices?alias=carol", key: theirs.serverKey)["devices"] as? [Any])?
                    .isEmpty == true)
            #expect(
                (try await api.call(.get, "/v1/devices?tag=private", key: theirs.serverKey)["devices"] as? [Any])?
                    .isEmpty == true)
            #expect(
                (try await api.call(.get, "/v1/devices", key: theirs.serverKey)["devices"] as? [Any])?.isEmpty == true)
            // The same token registered by another app is another device.
            let mineStill = try await api.call(.get, "/v1/devices/\(device)", key: mine.serverKey)
            #expect(mineStill["alias"] as? String == "carol")
        }
    }

    /// The import's batches take far longer to merge than herald-api's idle timeout (1 s here): the
    /// connection's clock runs only while herald-api waits on its client, so the import is
    /// answered (``ClientWaitTimeoutHandler``).
    @Test(
        "an app at its quota of active devices: a new device is refused 403 (by either key, and an import), a registered one registers again, an invalid one frees its place, another app goes on; refusals are counted"
    )
    func deviceQuota() async throws {
        try await withAPI(configure: {
            $0.maximumActiveDevicesPerApp = 2
            $0.deviceQuotaRefresh = .zero
        }) { api in
            let app = try await api.createApp()
            let other = try await api.createApp(name: "other app")
            func register(_ token: String, key: String) async throws -> APITest.Answer {
                try await api.call(
                    .post, "/v1/devices", key: key, json: #"{"token":"\#(token)","environment":"production"}"#)
            }
            let tokens = (0..<3).map { _ in APITest.randomToken() }
            let first = try await register(tokens[0], key: app.clientKey)
            #expect(first.status == .created)
            #expect(try await register(tokens[1], key: app.clientKey).status == .created)
            let refused = try await register(tokens[2], key: app.clientKey)
            #expect(refused.status == .forbidden && refused.errorCode == "device_quota_reached", "\(refused.text)")
            #expect(try await register(tokens[2], key: app.serverKey).errorCode == "device_quota_reached")
            let line = #"{"token":"\#(tokens[2])","environment":"production"}"#
            let imported = try await api.call(
                .post, "/v1/devices/import", key: app.serverKey, body: line + "\n", contentType: "application/x-ndjson")
            #expect(imported.errorCode == "device_quota_reached", "\(imported.text)")
            // Registered already: registers again (by the server key, which sees its registration id).
            #expect(try await register(tokens[0], key: app.clientKey).status == .ok)
            let again = try await register(tokens[0], key: app.serverKey)
            #expect(again.status == .ok)
            #expect(try await register(tokens[2], key: other.clientKey).status == .created)
            let metrics = try await api.call(.get, "/metrics", key: app.serverKey).text
            #expect(metrics.contains("\nherald_api_device_quota_refusals_total 3\n"))
            #expect(metrics.contains("\nherald_api_device_quota_used_ratio 1"))
            // APNs said one is dead: its place is free.
            let id = try #require((again["registration_id"] as? NSNumber)?.int64Value)
            try await markInvalid([id], reason: "Unregistered", client: api.database, logger: api.logger)
            let freed = try await register(tokens[2], key: app.clientKey)
            #expect(freed.status == .created, "\(freed.text)")
        }
    }

    /// Returns once herald-api has no import of the app running (PostgreSQL waits for it, at most
    /// ten minutes): a test whose client gave up must not stop its server mid-COPY, which ends the
    /// process in postgres-nio (docs/limits.md) and with it every other test. An import holds the
    /// app's advisory lock for its whole transaction (DeviceRepository+Import); taking the same
    /// lock (for a transaction of its own, with its own time limit, both gone at its end)
    /// waits for that transaction to end.
    static func importEnded(_ api: APITest, appID: UUID) async {
        _ = try? await api.database.withTransaction(logger: api.logger) { connection in
            try await connection.query("SET LOCAL statement_timeout = 600000", logger: api.logger)
            try await connection.query(
                "SELECT pg_advisory_xact_lock(hashtextextended('herald-device-import:' || \(appID)::text, 0))",
                logger: api.logger)
        }
    }

    @Test func bulkImportOfAHundredThousandLinesReportsBadOnes() async throws {
        try await withAPI(configure: { $0.idleTimeout = .seconds(1) }) { api in
            let app = try await api.createApp()
            var lines: [String] = []
            var badLines: [Int] = []
            for number in 1...100_000 {
                let token = String(format: "%064x", number)
                switch number % 10_000 {
                case 17:
                    lines.append(#"{"token":"nothex","environment":"production"}"#)
                    badLines.append(number)
                case 18:
                    lines.append(#"{"token":"\#(token)","environment":"moon"}"#)
                    badLines.append(number)
                case 19:
                    lines.append("not json at all")
                    badLines.append(number)
                default:
                    let tags = number % 3 == 0 ? #","tags":["third"]"# : ""
                    lines.append(#"{"token":"\#(token)","environment":"production"\#(tags)}"#)
                }
            }
            // Steps logged: the test hung or crashed in full `make test` runs when its client gave
            // up (never alone); these lines say which step it was in should it happen again.
            api.logger.info("bulk import test: importing 100,000 lines")
            var clientLogger = Logger(label: "test.api.bulk-import-client")
            clientLogger.logLevel = .debug
            let answer: APITest.Answer
            do {
                answer = try await api.callUnhurried(
                    .post, "/v1/devices/import", key: app.serverKey,
                    body: lines.joined(separator: "\n") + "\n", contentType: "application/x-ndjson",
                    clientLogger: clientLogger)
            } catch {
                api.logger.error("bulk import test: the import failed: \(String(reflecting: error))")
                await Self.importEnded(api, appID: try #require(UUID(uuidString: app.id)))
                throw error
            }
            api.logger.info("bulk import test: the import answered \(answer.status.code)")
            #expect(answer.status == .ok, "\(answer.text.prefix(300))")
            #expect(answer["lines"] as? Int == 100_000)
            #expect(answer["accepted"] as? Int == 100_000 - badLines.count)
            #expect(answer["rejected"] as? Int == badLines.count)
            let reported = (answer["errors"] as? [[String: Any]] ?? []).compactMap { $0["line"] as? Int }
            #expect(reported == badLines)

            let appID = UUID(uuidString: app.id)!
            let counts = try await api.database.query(
                """
                SELECT count(*), count(*) FILTER (WHERE EXISTS (SELECT 1 FROM device_tags t WHERE t.device_id = d.id AND t.tag = 'third'))
                FROM devices d WHERE d.app_id = \(appID) AND d.status = 'active'
                """, logger: api.logger)
            for try await (devices, tagged) in counts.decode((Int64, Int64).self) {
                #expect(devices == Int64(100_000 - badLines.count))
                #expect(tagged == Int64((1...100_000).filter { $0 % 3 == 0 && !badLines.contains($0) }.count))
            }

            // CSV, with a header; a known token is refreshed, not doubled.
            let csv = """
                token,environment,alias,tags
                \(String(format: "%064x", 1)),sandbox,dave,a|b
                \(APITest.randomToken()),production,,
                zz,production,,
                """
            // The test client's connection has been idle for the whole import, and herald-api has
            // closed it: what follows goes over new connections.
            let imported = try await api.callUnhurried(
                .post, "/v1/devices/import", key: app.serverKey, body: csv, contentType: "text/csv")
            #expect(
                imported["lines"] as? Int == 3 && imported["accepted"] as? Int == 2 && imported["rejected"] as? Int == 1
            )
            #expect((imported["errors"] as? [[String: Any]])?.first?["line"] as? Int == 4)
            let dave = try await api.callUnhurried(.get, "/v1/devices?alias=dave", key: app.serverKey)
            let daves = dave["devices"] as? [[String: Any]] ?? []
            #expect(daves.count == 1 && daves.first?["environment"] as? String == "sandbox")
            api.logger.info("bulk import test: every call answered; the server stops next")
        }
    }

    @Test("an import keeps backslashes, quotes, commas and braces in tags, aliases and locales as sent")
    func importKeepsEveryCharacter() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            let tags = [#"back\slash"#, #"say "hi""#, "a,b", "{x}", #"\"#, "plain"]
            let alias = #"o"neil\ {1}"#
            let object: [String: Any] = [
                "token": APITest.randomToken(), "environment": "production", "alias": alias, "tags": tags,
                "locale": #"x\y"#,
            ]
            let line = String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
            let answer = try await api.call(
                .post, "/v1/devices/import", key: app.serverKey, body: line + "\n", contentType: "application/x-ndjson")
            #expect(answer["accepted"] as? Int == 1, "\(answer.text)")
            let query = alias.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
            let found = try await api.call(.get, "/v1/devices?alias=\(query)", key: app.serverKey)
            let device = (found["devices"] as? [[String: Any]])?.first
            #expect(device?["alias"] as? String == alias, "\(found.text)")
            #expect(Set(device?["tags"] as? [String] ?? []) == Set(tags), "\(found.text)")
            #expect(device?["locale"] as? String == #"x\y"#)
        }
    }
}
