import AsyncHTTPClient
import Foundation
import HTTPTypes
import HeraldAccess
import HeraldCore
import HeraldDomain
import HeraldRecords
import HeraldStore
import NIOCore
import PostgresNIO
import StoreTestSupport
import Testing

@testable import HeraldAPI

@Suite("Open API: pushes")
struct PushesAPITests {
    static let hello =
        #"{"audience":{"all":true},"notification":{"alert":{"title":"Hello","body":"World"},"badge":3,"data":{"deep_link":"app://inbox"}}}"#

    @Test func acceptedPushIsStoredWithItsAnnouncementInOneGo() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            let answer = try await api.call(.post, "/v1/pushes", key: app.serverKey, json: Self.hello)
            #expect(answer.status == .accepted && answer["state"] as? String == "accepted")
            #expect(answer.headers[HTTPField.Name("RateLimit-Limit")!] != nil)
            let id = try #require(UUID(uuidString: answer["id"] as? String ?? ""))
            let push = try #require(
                try await PushRepository(client: api.database, logger: api.logger).push(
                    id: id, appID: UUID(uuidString: app.id)!))
            let payload = try JSONSerialization.jsonObject(with: Data(push.definition.payload)) as? [String: Any]
            let aps = payload?["aps"] as? [String: Any]
            #expect((aps?["alert"] as? [String: Any])?["title"] as? String == "Hello" && aps?["badge"] as? Int == 3)
            #expect(payload?["deep_link"] as? String == "app://inbox")
            #expect(push.definition.pushType == "alert" && push.definition.priority == 10)
            #expect(try PushAudience(json: push.definition.audienceJSON) == .everyone)

            // The outbox holds the announcement herald-center will publish.
            let rows = try await api.database.query(
                "SELECT topic, record_value FROM outbox WHERE record_key = \(ByteBuffer(bytes: Array(id.recordBytes)))",
                logger: api.logger)
            var events: [Herald_V1_PushEvent] = []
            for try await (topic, value) in rows.decode((String, ByteBuffer).self) {
                #expect(topic == "herald.pushes")
                events.append(try Herald_V1_PushEvent.decodeRecord(Array(buffer: value)))
            }
            #expect(events.count == 1 && events.first?.kind == .created)

            let status = try await api.call(.get, "/v1/pushes/\(id.uuidString.lowercased())", key: app.serverKey)
            #expect(status.status == .ok && status["push_type"] as? String == "alert")
            #expect(status["priority_class"] as? String == "campaign" && push.definition.priorityClass == .campaign)
            // The collapse id is decided once, on acceptance, and stored: the push's own id when
            // the caller set none. The fan-out copies it into every job record as it is.
            #expect(status["collapse_id"] as? String == id.uuidString.lowercased())
            #expect(push.definition.collapseID == id.uuidString.lowercased())
            #expect((status["counters"] as? [String: Any])?["targeted"] as? Int == 0)
        }
    }

    @Test("a push to aliases is transactional unless asked otherwise; a broadcast asked to be transactional is refused")
    func priorityClassIsStoredAndShown() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            let code = try await api.call(
                .post, "/v1/pushes", key: app.serverKey,
                json: #"{"audience":{"aliases":["user-1"]},"notification":{"alert":{"body":"Your code is 123456"}}}"#)
            #expect(code.status == .accepted)
            let id = try #require(code["id"] as? String)
            let status = try await api.call(.get, "/v1/pushes/\(id)", key: app.serverKey)
            #expect(status["priority_class"] as? String == "transactional")
            let stored = try await PushRepository(client: api.database, logger: api.logger).push(
                id: try #require(UUID(uuidString: id)), appID: try #require(UUID(uuidString: app.id)))
            #expect(stored?.definition.priorityClass == .transactional)
            let validated = try await api.call(
                .post, "/v1/pushes/validate", key: app.serverKey,
                json:
                    #"{"audience":{"aliases":["user-1"]},"notification":{"alert":{"body":"b"}},"options":{"priority_class":"campaign"}}"#
            )
            #expect(validated.status == .ok && validated["priority_class"] as? String == "campaign")
            let refused = try await api.call(
                .post, "/v1/pushes", key: app.serverKey,
                json:
                    #"{"audience":{"all":true},"notification":{"alert":{"body":"b"}},"options":{"priority_class":"transactional"}}"#
            )
            #expect(refused.status == .unprocessableContent)
            #expect((refused["error"] as? [String: Any])?["field"] as? String == "options.priority_class")
        }
    }

    @Test func idempotencyKeyReturnsTheFirstPush() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            let key: HTTPFields = [HTTPField.Name("Idempotency-Key")!: "campaign-42"]
            let first = try await api.call(.post, "/v1/pushes", key: app.serverKey, json: Self.hello, headers: key)
            // The same request again, its keys in another order: the same push.
            let reordered =
                #"{"notification":{"badge":3,"data":{"deep_link":"app://inbox"},"alert":{"body":"World","title":"Hello"}},"audience":{"all":true}}"#
            let second = try await api.call(.post, "/v1/pushes", key: app.serverKey, json: reordered, headers: key)
            #expect(first.status == .accepted && second.status == .accepted)
            #expect(first["id"] as? String == second["id"] as? String)
            #expect(second.headers[HTTPField.Name("Idempotent-Replayed")!] == "true")
            let different = try await api.call(
                .post, "/v1/pushes", key: app.serverKey,
                json: #"{"audience":{"all":true},"notification":{"alert":{"body":"Other"}}}"#, headers: key)
            #expect(different.status == .conflict && different.errorCode == "idempotency_key_reused")
            // Another app may use the same key for its own push.
            let other = try await api.createApp()
            let theirs = try await api.call(.post, "/v1/pushes", key: other.serverKey, json: Self.hello, headers: key)
            #expect(theirs.status == .accepted && theirs["id"] as? String != first["id"] as? String)
            let list = try await api.call(.get, "/v1/pushes", key: app.serverKey)
            #expect((list["pushes"] as? [Any])?.count == 1)
        }
    }

    @Test func refusedPushesSayWhy() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            let long = String(repeating: "x", count: 4100)
            let cases: [(String, HTTPResponse.Status, String)] = [
                (
                    #"{"audience":{"all":true},"notification":{"alert":{"body":"\#(long)"}}}"#, .contentTooLarge,
                    "notification"
                ),
                (
                    #"{"audience":{"all":false},"notification":{"alert":{"body":"x"}}}"#, .unprocessableContent,
                    "audience"
                ),
                (#"{"audience":{"all":true}}"#, .unprocessableContent, "notification"),
                (
                    #"{"audience":{"all":true},"notification":{"silent":true},"options":{"priority":10}}"#,
                    .unprocessableContent, "options.priority"
                ),
                (
                    #"{"audience":{"all":true},"notification":{"alert":{"body":"x"}},"options":{"scheduled_at":"2001-01-01T00:00:00Z"}}"#,
                    .unprocessableContent, "options.scheduled_at"
                ),
                (
                    #"{"audience":{"all":true},"notification":{"alert":{"body":"x"}},"options":{"throttle":{"per_second":5,"finish_within_seconds":10}}}"#,
                    .unprocessableContent, "options.throttle"
                ),
                (
                    #"{"audience":{"all":true},"notification":{"alert":{"body":"x"},"data":{"aps":1}}}"#,
                    .unprocessableContent, "notification.data"
                ),
                (
                    #"{"audience":{"registration_ids":[\#((1...1001).map(String.init).joined(separator: ","))]},"notification":{"alert":{"body":"x"}}}"#,
                    .unprocessableContent, "audience.registration_ids"
                ),
                (
                    #"{"audience":{"all":true},"notification":{"alert":{"body":"x"}},"options":{"replaces":"\#(UUID().uuidString)"}}"#,
                    .unprocessableContent, "options.replaces"
                ),
                (
                    #"{"audience":{"all":true},"notification":{"alert":{"body":"x"}},"options":{"push_type":"telepathy"}}"#,
                    .badRequest, "options.push_type"
                ),
                (
                    #"{"audience":{"all":true},"notification":{"alert":{"body":"x"}},"options":{"channel":"pigeon"}}"#,
                    .badRequest, "options.channel"
                ),
                (
                    #"{"audience":{"all":true},"notification":{"alert":{"body":"x"},"data":{"herald":{"push_id":"x"}}}}"#,
                    .unprocessableContent, "notification.data"
                ),
            ]
            for (json, status, field) in cases {
                let answer = try await api.call(.post, "/v1/pushes", key: app.serverKey, json: json)
                #expect(answer.status == status && answer.errorField == field, "\(field): \(answer.text)")
            }
            // voip takes 5120 bytes.
            let voip = String(repeating: "v", count: 4500)
            let accepted = try await api.call(
                .post, "/v1/pushes", key: app.serverKey,
                json: #"{"audience":{"all":true},"aps":{"alert":"\#(voip)"},"options":{"push_type":"voip"}}"#)
            #expect(accepted.status == .accepted)
            #expect(
                (try await api.call(.get, "/v1/pushes", key: app.serverKey)["pushes"] as? [Any])?.count == 1,
                "nothing refused was stored")
            // An in-app message: the channel is kept with the push's options, where herald-center reads it.
            let inApp = try await api.call(
                .post, "/v1/pushes", key: app.serverKey,
                json: #"{"audience":{"all":true},"notification":{"alert":{"body":"x"}},"options":{"channel":"online"}}"#
            )
            #expect(inApp.status == .accepted)
            let stored = try await PushRepository(client: api.database, logger: api.logger).push(
                id: try #require(UUID(uuidString: inApp["id"] as? String ?? "")), appID: UUID(uuidString: app.id)!)
            #expect(stored.map { PushChannel(optionsJSON: $0.definition.optionsJSON) } == .online)
        }
    }

    @Test func cancelPauseResumeRecallReplace() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            let later = ISO8601DateFormatter().string(from: Date().addingTimeInterval(3600))
            let scheduled = try await api.call(
                .post, "/v1/pushes", key: app.serverKey,
                json:
                    #"{"audience":{"tags":{"any":["news"]}},"notification":{"alert":{"body":"later"}},"options":{"scheduled_at":"\#(later)","throttle":{"per_second":100},"collapse_id":"daily"}}"#
            )
            #expect(scheduled.status == .accepted && scheduled["state"] as? String == "scheduled")
            let id = scheduled["id"] as? String ?? ""

            let paused = try await api.call(.post, "/v1/pushes/\(id)/pause", key: app.serverKey)
            #expect(paused.status == .ok && paused["paused"] as? Bool == true)
            let resumed = try await api.call(.post, "/v1/pushes/\(id)/resume", key: app.serverKey)
            #expect(resumed.status == .ok && resumed["paused"] as? Bool == false)

            // A replacing push takes the collapse id of the push it replaces.
            let replacing = try await api.call(
                .post, "/v1/pushes", key: app.serverKey,
                json:
                    #"{"audience":{"all":true},"notification":{"alert":{"body":"fixed"}},"options":{"replaces":"\#(id)"}}"#
            )
            #expect(replacing.status == .accepted)
            let replacingStatus = try await api.call(
                .get, "/v1/pushes/\(replacing["id"] as? String ?? "")", key: app.serverKey)
            #expect(replacingStatus["collapse_id"] as? String == "daily")

            let canceled = try await api.call(.delete, "/v1/pushes/\(id)", key: app.serverKey)
            #expect(
                canceled.status == .ok && canceled["state"] as? String == "canceled" && canceled["canceled_at"] != nil)
            let twice = try await api.call(.delete, "/v1/pushes/\(id)", key: app.serverKey)
            #expect(twice.status == .conflict && twice.errorCode == "push_finished")
            #expect(try await api.call(.post, "/v1/pushes/\(id)/pause", key: app.serverKey).status == .conflict)

            // A push of the tenant's whose idempotency key is what Herald once used for recalls
            // ("herald-recall:<id>") must not take the recall's place.
            let lookalike = try await api.call(
                .post, "/v1/pushes", key: app.serverKey, json: Self.hello,
                headers: [HTTPField.Name("Idempotency-Key")!: "herald-recall:\(id)"])
            #expect(lookalike.status == .accepted)

            // Recall: a background push carrying the revoke command, once however often asked.
            let recall = try await api.call(.post, "/v1/pushes/\(id)/recall", key: app.serverKey)
            #expect(recall["id"] as? String != lookalike["id"] as? String)
            #expect(recall.status == .accepted)
            let recallID = try #require(UUID(uuidString: recall["id"] as? String ?? ""))
            let again = try await api.call(.post, "/v1/pushes/\(id)/recall", key: app.serverKey)
            #expect(again["id"] as? String == recall["id"] as? String)
            let stored = try #require(
                try await PushRepository(client: api.database, logger: api.logger).push(
                    id: recallID, appID: UUID(uuidString: app.id)!))
            #expect(
                stored.definition.recallOf == UUID(uuidString: id) && stored.definition.pushType == "background"
                    && stored.definition.priority == 5)
            let payload = try JSONSerialization.jsonObject(with: Data(stored.definition.payload)) as? [String: Any]
            #expect((payload?["aps"] as? [String: Any])?["content-available"] as? Int == 1)
            #expect(
                (payload?["herald"] as? [String: String])
                    == [
                        "revoke": id, "push_id": recallID.uuidString.lowercased(),
                        "collapse_id": stored.definition.collapseID,
                    ])
            #expect(stored.definition.collapseID == "daily", "the original's collapse id")
            #expect(
                try await api.call(.post, "/v1/pushes/\(recallID.uuidString)/recall", key: app.serverKey).status
                    == .conflict)

            // Another app sees none of it.
            let other = try await api.createApp()
            for path in ["/v1/pushes/\(id)", "/v1/pushes/\(id)/failures", "/v1/pushes/\(id)/events"] {
                #expect(try await api.call(.get, path, key: other.serverKey).status == .notFound, "\(path)")
            }
            #expect(try await api.call(.delete, "/v1/pushes/\(id)", key: other.serverKey).status == .notFound)
            #expect(try await api.call(.post, "/v1/pushes/\(id)/recall", key: other.serverKey).status == .notFound)
        }
    }

    @Test func validationFailuresStatisticsAndEvents() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            let devices = [
                try await api.register(app, tags: ["a"]), try await api.register(app, tags: ["a"]),
                try await api.register(app, environment: "sandbox", tags: ["b"]),
            ]
            let dryRun = try await api.call(
                .post, "/v1/pushes/validate", key: app.serverKey,
                json: #"{"audience":{"tags":{"any":["a"]}},"notification":{"alert":{"body":"hi"}}}"#)
            #expect(
                dryRun.status == .ok && dryRun["audience_size"] as? Int == 2 && dryRun["payload_limit"] as? Int == 4096)
            #expect(dryRun["audience_size_estimated"] as? Bool == false)
            #expect((dryRun["warnings"] as? [String] ?? []).contains { $0.contains("no production APNs credential") })
            #expect(
                (try await api.call(.get, "/v1/pushes", key: app.serverKey)["pushes"] as? [Any])?.isEmpty == true,
                "a dry run stores nothing")

            let push = try await api.call(.post, "/v1/pushes", key: app.serverKey, json: Self.hello)
            let id = try #require(UUID(uuidString: push["id"] as? String ?? ""))
            // herald-center's accounting, played through its own repository: one batch, two
            // delivered, one rejected (its token is invalidated).
            try await accountAsCenter(
                pushID: id, deviceIDs: devices,
                failures: [
                    BatchOutcome.Failure(
                        deviceID: devices[2], status: .rejected, reason: "BadDeviceToken", httpStatus: 400,
                        unregisteredAt: nil, attempts: 1)
                ],
                topic: app.bundleID, client: api.database, logger: api.logger)
            let failures = try await api.call(.get, "/v1/pushes/\(id.uuidString)/failures", key: app.serverKey)
            let failure = (failures["failures"] as? [[String: Any]])?.first
            #expect(
                (failure?["registration_id"] as? NSNumber)?.int64Value == devices[2]
                    && failure?["reason"] as? String == "BadDeviceToken")
            let byReason = try await api.call(
                .get, "/v1/pushes/\(id.uuidString)/failures?reason=BadDeviceToken", key: app.serverKey)
            #expect((byReason["failures"] as? [[String: Any]])?.count == 1)
            let otherReason = try await api.call(
                .get, "/v1/pushes/\(id.uuidString)/failures?reason=Unregistered", key: app.serverKey)
            #expect((otherReason["failures"] as? [[String: Any]])?.isEmpty == true)

            let statistics = try await api.call(.get, "/v1/stats", key: app.serverKey)
            #expect((statistics["devices"] as? [String: Any])?["active"] as? Int == 2)
            #expect((statistics["devices"] as? [String: Any])?["invalid"] as? Int == 1)
            let completed = try await api.call(.get, "/v1/pushes/\(id.uuidString)", key: app.serverKey)
            #expect(completed["state"] as? String == "completed")
            #expect((completed["counters"] as? [String: Any])?["tokens_invalidated"] as? Int == 1)
            let delivery = statistics["delivery"] as? [String: Any]
            #expect(
                delivery?["accepted"] as? Int == 2
                    && (delivery?["rejected_by_reason"] as? [String: Any])?["BadDeviceToken"] as? Int == 1)

            // Live progress: the stream shows a push and ends once it is canceled (directly in
            // the store), canceled once its first event has arrived.
            let live = try await api.call(.post, "/v1/pushes", key: app.serverKey, json: Self.hello)
            let liveID = try #require(UUID(uuidString: live["id"] as? String ?? ""))
            let appID = try #require(UUID(uuidString: app.id))
            let repository = PushRepository(client: api.database, logger: api.logger)
            let events = try await api.openUnhurried(.get, "/v1/pushes/\(liveID.uuidString)/events", key: app.serverKey)
            #expect(
                events.status == .ok
                    && events.headers.first(name: "Content-Type")?.hasPrefix("text/event-stream") == true)
            let text = try await APITest.readEvents(events.body) {
                let canceled = try await repository.cancel(id: liveID, appID: appID)
                #expect(canceled)
            }
            let data = text.components(separatedBy: "\n").filter { $0.hasPrefix("data: ") }
            #expect(data.count >= 2)
            #expect(
                data.first?.contains(#""state":"accepted""#) == true
                    && data.last?.contains(#""state":"canceled""#) == true)
        }
    }

    @Test("a live progress stream ends once the key it was opened with is revoked; its next event is not sent")
    func progressStreamEndsWithItsKey() async throws {
        try await withAPI(configure: { $0.streamKeyCheck = .zero }) { api in
            let app = try await api.createApp()
            let made = try await api.call(
                .post, "/v1/apps/\(app.id)/keys", key: APITest.adminToken, json: #"{"kind":"server"}"#)
            let watcherKey = try #require(made["key"] as? String)
            let watcherID = try #require(made["id"] as? String)
            let push = try await api.call(.post, "/v1/pushes", key: app.serverKey, json: Self.hello)
            let id = try #require(push["id"] as? String)
            let events = try await api.openUnhurried(.get, "/v1/pushes/\(id)/events", key: watcherKey)
            #expect(events.status == .ok)
            let text = try await APITest.readEvents(events.body) {
                let revocation = try await api.call(
                    .delete, "/v1/apps/\(app.id)/keys/\(watcherID)", key: APITest.adminToken)
                #expect(revocation.status == .noContent)
                // A change the stream would show: it ends instead.
                #expect(try await api.call(.post, "/v1/pushes/\(id)/pause", key: app.serverKey).status == .ok)
            }
            let data = text.components(separatedBy: "\n").filter { $0.hasPrefix("data: ") }
            #expect(data.count == 1, "\(text)")
            #expect(!text.contains(#""paused":true"#))
        }
    }

    @Test func rateLimitAnswers429WithRetryAfter() async throws {
        let time = StoppedClock()
        try await withAPI(rateLimitPerSecond: 1, burst: 3, rateLimitClock: time.clock) { api in
            let app = try await api.createApp()
            // The burst of 3 passes, the fourth request is refused…
            var answers: [APITest.Answer] = []
            for _ in 0..<4 { answers.append(try await api.call(.get, "/v1/pushes", key: app.serverKey)) }
            #expect(answers.map(\.status) == [.ok, .ok, .ok, .tooManyRequests])
            let refused = answers[3]
            #expect(refused.errorCode == "rate_limited" && refused.headers[HTTPField.Name("Retry-After")!] == "1")
            #expect(refused.headers[HTTPField.Name("RateLimit-Limit")!] == "1")
            // …and a second later, one more passes: one request a second.
            time.advance(seconds: 1)
            #expect(try await api.call(.get, "/v1/pushes", key: app.serverKey).status == .ok)
            #expect(try await api.call(.get, "/v1/pushes", key: app.serverKey).status == .tooManyRequests)
            // Limits are per app: another app is not slowed down.
            let other = try await api.createApp()
            #expect(try await api.call(.get, "/v1/pushes", key: other.serverKey).status == .ok)
        }
    }

    @Test(
        "herald-api's pool carries its statement timeout, so PostgreSQL stops a query whose request was answered 503 (MigrationTests.statementTimeout: the stop itself)"
    )
    func poolCarriesTheStatementTimeout() async throws {
        // By default the request timeout and 5 s.
        let loaded = try await HeraldConfiguration.load(environment: ["HERALD_API_REQUEST_TIMEOUT_MS": "2000"])
        #expect(loaded.api.statementTimeout == .seconds(7))
        try await withAPI(configure: { $0.statementTimeout = .seconds(7) }) { api in
            for try await setting in try await api.database.query("SHOW statement_timeout", logger: api.logger)
                .decode(String.self)
            {
                #expect(setting == "7s")
            }
        }
    }

    @Test(
        "a validate past its deadline answers 503, and PostgreSQL ends its statement: no backend of herald-api's is left waiting"
    )
    func deadlineEndsTheQuery() async throws {
        let configuration = try await HeraldConfiguration.load()
        let logger = Logger(label: "test.api.deadline")
        // A database of its own: the test locks the devices tables, which every other test uses.
        let name = "herald_test_deadline_\(UUID().uuidString.prefix(8).lowercased())"
        try await HeraldDatabase.withClient(settings: configuration.postgres, logger: logger) {
            try await $0.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"), logger: logger)
        }
        var postgres = configuration.postgres
        postgres.database = name
        do {
            try await Self.validateBehindALock(postgres, database: name, configuration: configuration, logger: logger)
        } catch {
            Issue.record("\(String(reflecting: error))")
        }
        try await HeraldDatabase.withClient(settings: configuration.postgres, logger: logger) {
            try await $0.query(PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(name) WITH (FORCE)"), logger: logger)
        }
    }

    /// herald-api with a 2 s request timeout and its pool's 3 s statement timeout, asked to
    /// validate while another session holds the devices tables. The app and its key are stored
    /// directly: only the validate goes through the short timeout (a loaded machine once took
    /// longer than it to create an app).
    static func validateBehindALock(
        _ postgres: PostgresSettings, database name: String, configuration: HeraldConfiguration, logger: Logger
    ) async throws {
        try await HeraldDatabase.withClient(settings: postgres, logger: logger) { owner in
            try await MigrationRunner(client: owner, logger: logger).migrate()
            let app = try await AppRepository(client: owner, logger: logger).create(
                name: "deadline", bundleID: "com.example.deadline")
            let serverKey = APIKeySecret.generate(kind: .server)
            _ = try await APIKeyRepository(client: owner, logger: logger).create(
                appID: app.id, kind: .server, key: serverKey)
            var settings = configuration.api
            settings.port = 0
            settings.replicaHeartbeat = .zero
            settings.metricsPort = 0
            settings.keyCacheTTL = .zero
            settings.requestTimeout = .seconds(2)
            settings.statementTimeout = .seconds(3)
            var security = configuration.security
            security.adminToken = APITest.adminToken
            let masterKey = try #require(ProcessInfo.processInfo.environment["HERALD_MASTER_KEY"])
            security.masterKey = masterKey
            try await HeraldDatabase.withClient(
                settings: APIServer.poolSettings(postgres, api: settings), logger: logger
            ) { [settings, security] database in
                let server = try APIServer(
                    settings: settings, security: security, database: database, postgres: postgres, logger: logger)
                try await server.application.test(.live) { http in
                    let api = APITest(client: http, database: database, logger: logger, masterKey: masterKey)
                    try await owner.withConnection { holder in
                        try await holder.query("BEGIN", logger: logger)
                        try await holder.query(
                            "LOCK TABLE devices, device_tags, device_counts IN ACCESS EXCLUSIVE MODE", logger: logger)
                        let answer = try await api.call(
                            .post, "/v1/pushes/validate", key: serverKey,
                            json: #"{"audience":{"all":true},"notification":{"alert":{"body":"hi"}}}"#)
                        #expect(
                            answer.status == .serviceUnavailable && answer.errorCode == "timed_out", "\(answer.text)")
                        // The lock is still held: only PostgreSQL's statement timeout can free the
                        // backend that was counting (without it, this waits until it fails).
                        try await awaitInPostgres(
                            """
                            NOT EXISTS (SELECT 1 FROM pg_stat_activity
                                        WHERE datname = '\(name)' AND wait_event_type = 'Lock' AND state = 'active')
                            """, client: owner, logger: logger, within: .seconds(30))
                        try await holder.query("ROLLBACK", logger: logger)
                    }
                }
            }
        }
    }

    @Test("validate counts an audience exactly up to its bound and estimates past it, saying so")
    func validateIsBounded() async throws {
        try await withAPI(configure: { $0.validateExactUpTo = 2 }) { api in
            let app = try await api.createApp()
            // Two tags: the kept counts cannot answer it (they would for everyone or one tag).
            let body = #"{"audience":{"tags":{"any":["a","b"]}},"notification":{"alert":{"body":"hi"}}}"#
            _ = try await api.register(app, tags: ["a"])
            _ = try await api.register(app, tags: ["b"])
            let exact = try await api.call(.post, "/v1/pushes/validate", key: app.serverKey, json: body)
            #expect(exact["audience_size"] as? Int == 2 && exact["audience_size_estimated"] as? Bool == false)
            _ = try await api.register(app, tags: ["a", "b"])
            let estimated = try await api.call(.post, "/v1/pushes/validate", key: app.serverKey, json: body)
            #expect(estimated.status == .ok && estimated["audience_size_estimated"] as? Bool == true)
            #expect((estimated["audience_size"] as? Int ?? 0) >= 3, "at least past the bound")
            #expect((estimated["warnings"] as? [String] ?? []).contains { $0.contains("more than 2 devices") })
        }
    }

    @Test("validate answers everyone and one tag from the kept device counts: exact past the bound, by environment")
    func validateReadsKeptCounts() async throws {
        try await withAPI(configure: { $0.validateExactUpTo = 1 }) { api in
            let app = try await api.createApp()
            _ = try await api.register(app, tags: ["vip"])
            _ = try await api.register(app, tags: ["vip", "news"])
            _ = try await api.register(app, environment: "sandbox", tags: ["vip"])
            let gone = try await api.register(app, tags: ["vip"])
            #expect(try await api.call(.delete, "/v1/devices/\(gone)", key: app.serverKey).status == .noContent)
            func dryRun(_ audience: String) async throws -> (size: Int?, estimated: Bool?) {
                let answer = try await api.call(
                    .post, "/v1/pushes/validate", key: app.serverKey,
                    json: #"{"audience":\#(audience),"notification":{"alert":{"body":"hi"}}}"#)
                #expect(answer.status == .ok, "\(answer.text)")
                return (answer["audience_size"] as? Int, answer["audience_size_estimated"] as? Bool)
            }
            #expect(try await dryRun(#"{"all":true}"#) == (3, false))
            #expect(try await dryRun(#"{"tags":{"any":["vip"]}}"#) == (3, false))
            #expect(try await dryRun(#"{"tags":{"all":["vip"]},"environment":"production"}"#) == (2, false))
            #expect(try await dryRun(#"{"all":true,"environment":"sandbox"}"#) == (1, false))
            #expect(try await dryRun(#"{"tags":{"any":["news"]}}"#) == (1, false))
            #expect(try await dryRun(#"{"tags":{"any":["nobody"]}}"#) == (0, false))
            // Not from the counts: past the bound of 1, estimated.
            #expect(try await dryRun(#"{"tags":{"any":["vip"],"none":["news"]}}"#).estimated == true)
        }
    }

    @Test(
        "a push at 09:00 local time: validate shows its waves by time zone; it is accepted as a campaign, scheduled for UTC+14's 09:00, and shows its local time"
    )
    func localTimeIsValidatedStoredAndShown() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            for zone in ["Asia/Tokyo", "Asia/Tokyo", "Europe/Berlin", "Europe/Paris"] {
                _ = try await api.register(app, timeZone: zone)
            }
            _ = try await api.register(app)
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = TimeZone(identifier: "UTC")!
            let day = calendar.dateComponents([.year, .month, .day], from: Date().addingTimeInterval(3 * 86_400))
            let date = String(format: "%04d-%02d-%02d", day.year!, day.month!, day.day!)
            let body =
                #"{"audience":{"all":true},"notification":{"alert":{"body":"Good morning"}},"options":{"local_time":{"time":"09:00","date":"\#(date)"}}}"#
            let validated = try await api.call(.post, "/v1/pushes/validate", key: app.serverKey, json: body)
            #expect(validated.status == .ok, "\(validated.text)")
            #expect(validated["waves_estimated"] as? Bool == false, "within the bound: counted")
            let waves = try #require(validated["waves"] as? [[String: Any]])
            #expect(
                waves.map { $0["time_zones"] as? [String] ?? [] } == [
                    ["Asia/Tokyo"], ["Europe/Berlin", "Europe/Paris"], [""],
                ])
            #expect(waves.map { $0["devices"] as? Int ?? 0 } == [2, 2, 1])
            #expect(
                waves.map { $0["send_at"] as? String ?? "" }
                    == ["T00:00:00Z", "T08:00:00Z", "T09:00:00Z"].map { date + $0 })

            let created = try await api.call(.post, "/v1/pushes", key: app.serverKey, json: body)
            #expect(created.status == .accepted && created["state"] as? String == "scheduled")
            let id = try #require(created["id"] as? String)
            let status = try await api.call(.get, "/v1/pushes/\(id)", key: app.serverKey)
            #expect(status["priority_class"] as? String == "campaign")
            #expect((status["local_time"] as? [String: Any])?["time"] as? String == "09:00")
            #expect((status["local_time"] as? [String: Any])?["date"] as? String == date)
            let before = try #require(calendar.date(from: day)).addingTimeInterval(-5 * 3600)
            #expect(status["scheduled_at"] as? String == ISO8601DateFormatter().string(from: before), "UTC+14's 09:00")

            let refused = try await api.call(
                .post, "/v1/pushes", key: app.serverKey,
                json:
                    #"{"audience":{"all":true},"notification":{"alert":{"body":"b"}},"options":{"local_time":{"time":"25:00"}}}"#
            )
            #expect(refused.status == .unprocessableContent)
            #expect((refused["error"] as? [String: Any])?["field"] as? String == "options.local_time.time")
        }
    }

    @Test(
        "past validate's bound, a local-time plan's waves come from a sample of the audience spread over the app's devices, scaled to its size, and say so"
    )
    func localTimePlanIsSampledPastTheBound() async throws {
        try await withAPI(configure: { $0.validateExactUpTo = 4 }) { api in
            let app = try await api.createApp()
            let zones = ["Asia/Tokyo", "Europe/Berlin", nil, "Asia/Tokyo"]
            for index in 0..<12 { _ = try await api.register(app, timeZone: zones[index % zones.count]) }
            let body =
                #"{"audience":{"all":true},"notification":{"alert":{"body":"Good morning"}},"options":{"local_time":{"time":"09:00"}}}"#
            let validated = try await api.call(.post, "/v1/pushes/validate", key: app.serverKey, json: body)
            #expect(validated.status == .ok, "\(validated.text)")
            #expect(validated["audience_size"] as? Int == 12 && validated["audience_size_estimated"] as? Bool == false)
            #expect(validated["waves_estimated"] as? Bool == true, "the size is exact (kept counts), the waves sampled")
            // A sample of 10,000 asked of twelve devices reads the app's whole span: the shares
            // come out exact.
            let waves = try #require(validated["waves"] as? [[String: Any]])
            var byZone: [String: Int] = [:]
            for wave in waves {
                let zones = wave["time_zones"] as? [String] ?? []
                #expect(zones.count == 1, "Tokyo, Berlin and no zone are apart at any hour: \(waves)")
                byZone[zones.first ?? "?"] = wave["devices"] as? Int
            }
            #expect(byZone == ["Asia/Tokyo": 6, "Europe/Berlin": 3, "": 3])
            #expect(
                (validated["warnings"] as? [String] ?? []).contains {
                    $0.contains("estimated from a sample of 12 of the audience's devices")
                }, "\(validated.text)")
        }
    }
}
