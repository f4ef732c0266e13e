import Foundation
import HeraldAPNs
import HeraldCore
import HeraldDomain
import HeraldStore
import PostgresNIO
import StoreTestSupport
import Synchronization
import Testing

/// Round trips through every repository against the real PostgreSQL server. Each test works in
/// apps of its own.
@Suite(.serialized) struct RepositoryTests {
    @Test("apps: create, get, list, update, delete")
    func apps() async throws {
        try await withMigratedStore { client, logger in
            let apps = AppRepository(client: client, logger: logger)
            let app = try await apps.create(name: "Shop", bundleID: "com.example.shop")
            #expect(try await apps.app(id: app.id) == app)
            #expect(try await apps.list(limit: 10_000).contains(app))
            let renamed = try await apps.update(id: app.id, .init(name: "Shop 2"))
            #expect(renamed?.name == "Shop 2")
            #expect(renamed?.bundleID == "com.example.shop")
            #expect(try await apps.update(id: UUID(), .init(name: "x")) == nil)
            #expect(try await apps.delete(id: app.id))
            #expect(try await apps.app(id: app.id) == nil)
            #expect(try await !apps.delete(id: app.id))
        }
    }

    @Test("API keys are stored hashed, authenticate by the key, and stop working when revoked")
    func apiKeys() async throws {
        try await withMigratedStore { client, logger in
            let app = try await AppRepository(client: client, logger: logger).create(
                name: "Keys", bundleID: "com.example.keys")
            let keys = APIKeyRepository(client: client, logger: logger)
            let secret = "hsk_" + UUID().uuidString + UUID().uuidString
            let record = try await keys.create(appID: app.id, kind: .server, key: secret, name: "back-end")
            #expect(record.keyPrefix == String(secret.prefix(8)))

            // Only the hash is in the table.
            let rows = try await client.query("SELECT key_hash FROM api_keys WHERE id = \(record.id)", logger: logger)
            for try await hash in rows.decode(Data.self) {
                #expect(Array(hash) == SecretHasher.hash(secret))
                #expect(!String(decoding: hash, as: UTF8.self).contains(secret))
            }

            #expect(try await keys.authenticate(key: secret)?.id == record.id)
            #expect(try await keys.authenticate(key: secret + "x") == nil)
            #expect(try await keys.revoke(id: record.id, appID: UUID()) == false, "another app cannot revoke it")
            #expect(try await keys.revoke(id: record.id, appID: app.id))
            #expect(try await keys.authenticate(key: secret) == nil)
            #expect(try await keys.keys(appID: app.id).first?.revokedAt != nil)
        }
    }

    @Test("a device registered twice with the same token stays one row, keeps its id and is reactivated")
    func deviceRegistration() async throws {
        try await withMigratedStore { client, logger in
            let app = try await AppRepository(client: client, logger: logger).create(
                name: "Devices", bundleID: "com.example.devices")
            let devices = DeviceRepository(client: client, logger: logger)
            let token = randomToken()
            let first = try await devices.register(
                DeviceRegistration(
                    appID: app.id, token: token, environment: .sandbox, topic: app.bundleID, alias: "alice",
                    tags: ["news", "vip"], locale: "en_GB", timeZone: "Europe/London"))
            #expect(first.isNew)
            try await markInvalid([first.id], reason: "BadDeviceToken", client: client, logger: logger)
            #expect(try await devices.device(id: first.id, appID: app.id)?.status == .invalid)

            let second = try await devices.register(
                DeviceRegistration(
                    appID: app.id, token: token, environment: .production, topic: app.bundleID, tags: ["sports"]))
            #expect(second.id == first.id)
            #expect(!second.isNew)
            let rows = try await client.query("SELECT count(*) FROM devices WHERE app_id = \(app.id)", logger: logger)
            for try await count in rows.decode(Int64.self) { #expect(count == 1) }

            let device = try #require(try await devices.device(id: first.id, appID: app.id))
            #expect(device.status == .active)
            #expect(device.invalidatedAt == nil)
            #expect(device.environment == .production)
            #expect(device.alias == "alice", "an alias not given again is kept")
            #expect(device.locale == "en_GB")
            #expect(device.tags == ["news", "sports", "vip"])
            #expect(device.token == token)

            // Another app never sees it.
            #expect(try await devices.device(id: first.id, appID: UUID()) == nil)
        }
    }

    @Test("aliases and tags: set, add, remove, look up")
    func aliasesAndTags() async throws {
        try await withMigratedStore { client, logger in
            let app = try await AppRepository(client: client, logger: logger).create(
                name: "Tags", bundleID: "com.example.tags")
            let devices = DeviceRepository(client: client, logger: logger)
            let a = try await devices.register(
                DeviceRegistration(
                    appID: app.id, token: randomToken(), environment: .production,
                    topic: app.bundleID, tags: ["a", "b"]))
            let b = try await devices.register(
                DeviceRegistration(
                    appID: app.id, token: randomToken(), environment: .production,
                    topic: app.bundleID, tags: ["b"]))
            #expect(try await devices.setAlias("bob", deviceID: b.id, appID: app.id))
            #expect(try await devices.devices(alias: "bob", appID: app.id).map(\.id) == [b.id])
            #expect(try await devices.updateTags(adding: ["c"], removing: ["a"], deviceID: a.id, appID: app.id))
            #expect(try await devices.device(id: a.id, appID: app.id)?.tags == ["b", "c"])
            #expect(try await devices.devices(tag: "b", appID: app.id).map(\.id) == [a.id, b.id])
            #expect(try await devices.devices(tag: "b", appID: app.id, after: a.id).map(\.id) == [b.id])
            #expect(try await devices.devices(tag: "a", appID: app.id).isEmpty)
            #expect(try await !devices.updateTags(adding: ["x"], removing: [], deviceID: a.id, appID: UUID()))
            #expect(try await devices.delete(id: a.id, appID: app.id))
            #expect(try await devices.devices(tag: "c", appID: app.id).isEmpty, "a deleted device's tags go with it")
        }
    }

    @Test("410 Unregistered invalidates a token only if the device did not register again after APNs' timestamp")
    func unregisteredTimestampRule() async throws {
        // A database of its own: the purge at the end removes every invalid device it holds,
        // which in the shared one would include other tests' (a push test running beside it
        // once saw its invalidated device vanish).
        try await withEmptyDatabase { client, logger in
            try await MigrationRunner(client: client, logger: logger).migrate()
            let app = try await AppRepository(client: client, logger: logger).create(
                name: "410", bundleID: "com.example.gone")
            let devices = DeviceRepository(client: client, logger: logger)
            let kept = try await devices.register(
                DeviceRegistration(
                    appID: app.id, token: randomToken(), environment: .production, topic: app.bundleID)
            ).id
            let gone = try await devices.register(
                DeviceRegistration(
                    appID: app.id, token: randomToken(), environment: .production, topic: app.bundleID)
            ).id
            let registeredAt = try #require(try await devices.device(id: gone, appID: app.id)).registeredAt
            let push = try await PushRepository(client: client, logger: logger).create(
                NewPush(
                    id: UUID(), appID: app.id, audienceJSON: #"{"all": true}"#, notificationJSON: "{}",
                    payload: Array("{}".utf8)),
                announcement: .init(topic: "herald.test", key: nil, value: [])
            ).push

            // APNs says one token died before its device registered (keep it), the other after (invalidate it).
            func unregistered(_ device: Int64, at date: Date) -> BatchOutcome.Failure {
                BatchOutcome.Failure(
                    deviceID: device, status: .rejected, reason: "Unregistered", httpStatus: 410,
                    unregisteredAt: date, attempts: 1)
            }
            let applied = try await accountAsCenter(
                pushID: push.id, deviceIDs: [kept, gone],
                failures: [
                    unregistered(kept, at: registeredAt.addingTimeInterval(-60)),
                    unregistered(gone, at: registeredAt.addingTimeInterval(60)),
                ],
                topic: app.bundleID, client: client, logger: logger)
            #expect(applied.tokensInvalidated == 1 && applied.pushesCompleted == [push.id])
            #expect(try await devices.device(id: kept, appID: app.id)?.status == .active)
            let invalid = try #require(try await devices.device(id: gone, appID: app.id))
            #expect(invalid.status == .invalid)
            #expect(invalid.invalidReason == "Unregistered")
            // Purging invalid tokens older than a cutoff removes it.
            #expect(try await devices.purgeInvalid(before: Date().addingTimeInterval(3600)) >= 1)
            #expect(try await devices.device(id: gone, appID: app.id) == nil)
            #expect(try await devices.device(id: kept, appID: app.id) != nil)
        }
    }

    @Test("an outcome invalidates only devices of its push's app inside its batch; a sequence past Int32 is no batch's")
    func outcomesTouchOnlyTheirBatch() async throws {
        try await withMigratedStore { client, logger in
            let apps = AppRepository(client: client, logger: logger)
            let app = try await apps.create(name: "Mine", bundleID: "com.example.mine")
            let other = try await apps.create(name: "Theirs", bundleID: "com.example.theirs")
            let devices = DeviceRepository(client: client, logger: logger)
            func register(_ app: App) async throws -> Int64 {
                try await devices.register(
                    DeviceRegistration(
                        appID: app.id, token: randomToken(), environment: .production, topic: app.bundleID)
                ).id
            }
            // Ids interleave: the other app's device lies inside this app's batch range.
            let first = try await register(app)
            let theirs = try await register(other)
            let last = try await register(app)
            let outside = try await register(app)
            let push = try await PushRepository(client: client, logger: logger).create(
                NewPush(
                    id: UUID(), appID: app.id, audienceJSON: #"{"all": true}"#, notificationJSON: "{}",
                    payload: Array("{}".utf8)),
                announcement: .init(topic: "herald.test", key: nil, value: [])
            ).push
            func dead(_ device: Int64) -> BatchOutcome.Failure {
                BatchOutcome.Failure(
                    deviceID: device, status: .rejected, reason: "BadDeviceToken", httpStatus: 400, unregisteredAt: nil,
                    attempts: 1)
            }
            let applied = try await accountAsCenter(
                pushID: push.id, deviceIDs: [first, last], failures: [dead(first), dead(theirs), dead(outside)],
                topic: app.bundleID, client: client, logger: logger)
            #expect(applied.tokensInvalidated == 1)
            #expect(try await devices.device(id: first, appID: app.id)?.status == .invalid)
            #expect(try await devices.device(id: theirs, appID: other.id)?.status == .active, "another app's device")
            #expect(try await devices.device(id: outside, appID: app.id)?.status == .active, "not in the batch")

            let ledger = OutcomeLedger(client: client, logger: logger)
            let beyond = try await ledger.applyOutcomes([
                BatchOutcome(pushID: push.id, sequence: Int(Int32.max) + 1, acceptedDeviceIDs: [first], failures: [])
            ])
            #expect(beyond.batchesIgnored == 1 && beyond.batchesCounted == 0)
        }
    }

    @Test("audience pages walk an app's active devices in id order, never another app's or invalid ones")
    func audiencePages() async throws {
        try await withMigratedStore { client, logger in
            let apps = AppRepository(client: client, logger: logger)
            let app = try await apps.create(name: "Audience", bundleID: "com.example.audience")
            let other = try await apps.create(name: "Other", bundleID: "com.example.other")
            let devices = DeviceRepository(client: client, logger: logger)
            var expected: [Int64] = []
            for index in 0..<25 {
                let id = try await devices.register(
                    DeviceRegistration(
                        appID: app.id, token: randomToken(), environment: index % 5 == 0 ? .sandbox : .production,
                        topic: app.bundleID)
                ).id
                _ = try await devices.register(
                    DeviceRegistration(
                        appID: other.id, token: randomToken(), environment: .production,
                        topic: other.bundleID))
                if index % 7 == 3 {
                    try await markInvalid([id], reason: "BadDeviceToken", client: client, logger: logger)
                } else {
                    expected.append(id)
                }
            }
            let audiences = AudienceRepository(client: client, logger: logger)
            var seen: [Int64] = []
            var cursor: Int64 = 0
            while true {
                let page = try await audiences.page(
                    AudienceSelection(appID: app.id, audience: .everyone), after: cursor, limit: 4
                ).targets
                guard let last = page.last else { break }
                #expect(page.count <= 4)
                seen.append(contentsOf: page.map(\.deviceID))
                cursor = last.deviceID
            }
            #expect(seen == expected)
            let sandbox = try await audiences.page(
                AudienceSelection(appID: app.id, audience: PushAudience(all: true, environment: .sandbox)),
                after: 0, limit: 100
            ).targets
            #expect(sandbox.allSatisfy { $0.environment == .sandbox })
            #expect(Set(sandbox.map(\.deviceID)).isSubset(of: Set(expected)))
            #expect(sandbox.count == 4, "indexes 0, 5, 15 and 20 are sandbox; 10 is invalid (10 % 7 == 3)")
        }
    }

    // Without cancellation the waiting caller never answers: the time limit makes that a failure.
    @Test(
        "a caller cancelled while it waits behind a stuck statement leaves the line at once, its push unwritten",
        .timeLimit(.minutes(1)))
    func cancelledWaiterLeavesTheLine() async throws {
        try await withEmptyDatabase { client, logger in
            try await MigrationRunner(client: client, logger: logger).migrate()
            let app = try await AppRepository(client: client, logger: logger).create(
                name: "Stuck", bundleID: "com.example.stuck")
            let writer = PushWriter(client: client, logger: logger, maximumWriters: 1)
            func push() -> NewPush {
                NewPush(
                    id: UUID(), appID: app.id, audienceJSON: #"{"all": true}"#, notificationJSON: "{}",
                    payload: Array("{}".utf8))
            }
            let (first, second) = (push(), push())
            let secondAnswer = try await client.withConnection { connection in
                // Every push write appends to the outbox: holding it makes the first statement stick.
                try await connection.query("BEGIN", logger: logger)
                try await connection.query("LOCK TABLE outbox IN ACCESS EXCLUSIVE MODE", logger: logger)
                let writing = Task {
                    try await writer.create(first, announcement: .init(topic: "t", key: nil, value: [1]))
                }
                // The first statement holds the only writer once PostgreSQL shows it waiting on the lock.
                try await awaitInPostgres(
                    "EXISTS (SELECT 1 FROM pg_locks WHERE relation = 'outbox'::regclass AND NOT granted)",
                    client: client, logger: logger)
                let waiting = Task {
                    try await writer.create(second, announcement: .init(topic: "t", key: nil, value: [2]))
                }
                // In line behind it, then cancelled.
                await writer.waitUntilWaiting(1)
                waiting.cancel()
                // It answers while the statement ahead of it is still stuck (the lock is held).
                let answer = await waiting.result
                try await connection.query("ROLLBACK", logger: logger)
                _ = try await writing.value
                return answer
            }
            #expect(throws: CancellationError.self) { try secondAnswer.get() }
            let pushes = PushRepository(client: client, logger: logger)
            #expect(try await pushes.push(id: first.id, appID: app.id) != nil)
            #expect(try await pushes.push(id: second.id, appID: app.id) == nil, "a caller that left is not written")
            // The line still works.
            #expect(try await writer.create(push(), announcement: .init(topic: "t", key: nil, value: [3])).created)
        }
    }

    @Test(
        "pushes written together: each stored once with its counters and announcement, idempotency keys honoured across a batch, a bad push fails alone"
    )
    func pushesWrittenTogether() async throws {
        try await withMigratedStore { client, logger in
            let app = try await AppRepository(client: client, logger: logger).create(
                name: "Batched", bundleID: "com.example.batched")
            // One writer at a time: whatever arrives meanwhile waits and is written together.
            let writer = PushWriter(client: client, logger: logger, maximumWriters: 1, maximumBatch: 64)
            let later = Date().addingTimeInterval(3600)
            func push(_ number: Int, app appID: UUID, key: String? = nil) -> NewPush {
                var push = NewPush(
                    id: UUID(), appID: appID, audienceJSON: #"{"all": true}"#, notificationJSON: #"{"n": \#(number)}"#,
                    payload: Array("{\"aps\":{\"alert\":\"\(number)\"}}".utf8), idempotencyKey: key)
                if number % 2 == 0 {
                    push.state = .scheduled
                    push.expiresAt = later
                    push.scheduledAt = later.addingTimeInterval(-60)
                    push.collapseID = "c\(number)"
                    push.throttlePerSecond = number + 1
                } else {
                    push.finishWithinSeconds = 600
                }
                return push
            }
            let plain = (0..<100).map { push($0, app: app.id) }
            let sameKey = (100..<110).map { push($0, app: app.id, key: "retry-me") }
            let unknownApp = (110..<120).map { push($0, app: UUID()) }
            enum Answer {
                case created(UUID, Bool)
                case failed(UUID)
            }
            let answers = await withTaskGroup(of: Answer.self) { group in
                for push in plain + sameKey + unknownApp {
                    group.addTask {
                        do {
                            let (stored, created) = try await writer.create(
                                push,
                                announcement: .init(
                                    topic: "herald.pushes", key: Array(push.id.uuidString.utf8), value: [1]))
                            return .created(stored.id, created)
                        } catch {
                            return .failed(push.id)
                        }
                    }
                }
                var answers: [Answer] = []
                for await answer in group { answers.append(answer) }
                return answers
            }
            var created: Set<UUID> = []
            var replayed: [UUID] = []
            var failed: Set<UUID> = []
            for answer in answers {
                switch answer {
                case .created(let id, true): created.insert(id)
                case .created(let id, false): replayed.append(id)
                case .failed(let id): failed.insert(id)
                }
            }
            #expect(writer.statements < 120, "pushes that waited were written together")
            #expect(failed == Set(unknownApp.map(\.id)), "only the pushes of an unknown app fail")
            #expect(created.isSuperset(of: plain.map(\.id)))
            let keyed = created.subtracting(plain.map(\.id))
            #expect(keyed.count == 1, "one push per idempotency key")
            #expect(replayed.count == 9 && Set(replayed) == keyed, "the others get the first push back")

            let pushes = PushRepository(client: client, logger: logger)
            for original in plain.prefix(4) {
                let stored = try #require(try await pushes.push(id: original.id, appID: app.id))
                #expect(stored.state == original.state)
                #expect(stored.definition.payload == original.payload)
                #expect(stored.definition.collapseID == original.collapseID)
                #expect(stored.definition.throttlePerSecond == original.throttlePerSecond)
                #expect(stored.definition.finishWithinSeconds == original.finishWithinSeconds)
                #expect(stored.definition.idempotencyKey == nil && stored.definition.recallOf == nil)
                #expect(
                    stored.definition.expiresAt.map { abs($0.timeIntervalSince(later)) < 0.001 }
                        ?? (original.expiresAt == nil))
                #expect((stored.definition.scheduledAt == nil) == (original.scheduledAt == nil))
            }
            let rows = try await client.query(
                """
                SELECT (SELECT count(*) FROM pushes WHERE app_id = \(app.id)),
                       (SELECT count(*) FROM push_counters c JOIN pushes p ON p.id = c.push_id WHERE p.app_id = \(app.id)),
                       (SELECT count(*) FROM outbox WHERE encode(record_key, 'hex') = ANY(\(created.map { $0.uuidString.utf8.map { String(format: "%02x", $0) }.joined() })))
                """, logger: logger)
            for try await (stored, counters, announced) in rows.decode((Int64, Int64, Int64).self) {
                #expect(stored == 101 && counters == 101 && announced == 101)
            }
        }
    }

    @Test("pushes: stored with counters and outbox in one transaction; an idempotency key returns the first push")
    func pushes() async throws {
        try await withMigratedStore { client, logger in
            let app = try await AppRepository(client: client, logger: logger).create(
                name: "Pushes", bundleID: "com.example.pushes")
            let pushes = PushRepository(client: client, logger: logger)
            let key = "order-\(UUID())"
            let first = NewPush(
                id: UUID(), appID: app.id, audienceJSON: #"{"all": true}"#, notificationJSON: #"{"alert": "hi"}"#,
                payload: Array(#"{"aps":{"alert":"hi"}}"#.utf8), collapseID: "c1", idempotencyKey: key)
            let created = try await pushes.create(
                first, announcement: .init(topic: "herald.pushes", key: [1], value: [2, 3]))
            #expect(created.created)
            #expect(created.push.id == first.id)
            #expect(created.push.state == .accepted)
            #expect(created.push.definition.payload == first.payload)

            var retry = first
            retry.id = UUID()
            let again = try await pushes.create(
                retry, announcement: .init(topic: "herald.pushes", key: [9], value: [9]))
            #expect(!again.created)
            #expect(again.push.id == first.id)
            let outboxRows = try await client.query(
                "SELECT count(*) FROM outbox WHERE record_key = \(Data([9]))", logger: logger)
            for try await count in outboxRows.decode(Int64.self) {
                #expect(count == 0, "a duplicate push writes no outbox record")
            }

            // Fan-out progress, as herald-center records it: a batch recorded twice counts once.
            let claims = FanoutClaimRepository(client: client, logger: logger)
            let progress = FanoutProgressRepository(client: client, logger: logger)
            let ledger = OutcomeLedger(client: client, logger: logger)
            #expect(try await claims.claim([first.id], by: "center-a", lease: .seconds(60)).map(\.id) == [first.id])
            #expect(
                try await claims.claim([first.id], by: "center-b", lease: .seconds(60)).isEmpty, "one center at a time"
            )
            func batch(_ sequence: Int, _ firstDevice: Int64, _ lastDevice: Int64, _ count: Int) -> RecordedBatch {
                RecordedBatch(
                    pushID: first.id, sequence: sequence, firstDevice: firstDevice, lastDevice: lastDevice,
                    targetCount: count, environment: .production, topic: app.bundleID)
            }
            #expect(
                try await progress.recordPage(
                    pushID: first.id, by: "center-a", cursor: 500, batches: [batch(0, 1, 500, 500)])
                    == .recorded(paused: false))
            #expect(
                try await progress.recordPage(
                    pushID: first.id, by: "center-a", cursor: 700,
                    batches: [batch(0, 1, 500, 500), batch(1, 501, 700, 150)]) == .recorded(paused: false))
            #expect(
                try await progress.recordPage(pushID: first.id, by: "center-b", cursor: 900, batches: []) == .claimLost)
            let progressed = try #require(try await pushes.push(id: first.id, appID: app.id))
            #expect(progressed.fanoutCursor == 700)
            #expect(progressed.batchesEmitted == 2)
            #expect(try await pushes.counters(pushID: first.id)?.targeted == 650)
            #expect(try await progress.finishFanout(pushID: first.id, by: "center-a"))

            // Outcomes add up; a redelivered outcome is not counted again.
            func rejected(_ device: Int64, _ reason: String) -> BatchOutcome.Failure {
                BatchOutcome.Failure(
                    deviceID: device, status: .rejected, reason: reason, httpStatus: 400, unregisteredAt: nil,
                    attempts: 1)
            }
            let firstBatch = BatchOutcome(
                pushID: first.id, sequence: 0, acceptedDeviceIDs: Array(1...460),
                failures: (461...490).map { rejected($0, "TopicDisallowed") }
                    + (491...500).map { rejected($0, "PayloadTooLarge") })
            #expect(try await ledger.applyOutcomes([firstBatch]).batchesCounted == 1)
            #expect(try await ledger.applyOutcomes([firstBatch]).batchesIgnored == 1)
            let expired = BatchOutcome.Failure(
                deviceID: 503, status: .expired, reason: "", httpStatus: 0, unregisteredAt: nil, attempts: 4)
            let secondBatch = BatchOutcome(
                pushID: first.id, sequence: 1, acceptedDeviceIDs: Array(504...653),
                failures: [rejected(501, "PayloadTooLarge"), rejected(502, "PayloadTooLarge"), expired])
            // One call (as the center groups outcomes) with the first batch redelivered and the
            // second one twice: the second is counted once, with its own accepted devices.
            let applied = try await ledger.applyOutcomes([firstBatch, secondBatch, secondBatch])
            #expect(applied.batchesCounted == 1 && applied.batchesIgnored == 2 && applied.notificationsCounted == 153)
            #expect(applied.pushesCompleted == [first.id])
            let stored = try await client.query(
                "SELECT sequence, accepted_device_ids FROM push_batches WHERE push_id = \(first.id) ORDER BY sequence",
                logger: logger)
            var acceptedBySequence: [Int32: [Int64]] = [:]
            for try await (sequence, accepted) in stored.decode((Int32, [Int64]).self) {
                acceptedBySequence[sequence] = accepted
            }
            #expect(acceptedBySequence == [0: Array(1...460), 1: Array(504...653)])
            let counters = try #require(try await pushes.counters(pushID: first.id))
            // The second batch reported 153 devices where 150 were recorded: the outcome is the truth.
            #expect(
                counters.targeted == 653 && counters.accepted == 610 && counters.rejected == 42 && counters.expired == 1
            )
            // (Reasons that leave tokens alone: these device ids are made up.)
            #expect(counters.rejectedByReason == ["TopicDisallowed": 30, "PayloadTooLarge": 12])
            #expect(counters.isComplete)

            let failures = try await pushes.failurePage(pushID: first.id, after: 500, limit: 10).map(\.failure)
            #expect(failures.map(\.deviceID) == [501, 502, 503])
            #expect(failures[2].reason == nil && failures[2].attempts == 4 && failures[2].status == .expired)
            #expect(failures[0].httpStatus == 400)

            #expect(try await !pushes.cancel(id: first.id, appID: app.id), "a completed push is not canceled")
            #expect(
                try await pushes.progressList(appID: app.id, state: nil, before: nil, limit: 10).map(\.push.id) == [
                    first.id
                ])
            #expect(try await pushes.progressList(appID: app.id, state: .canceled, before: nil, limit: 10).isEmpty)
            #expect(try await pushes.push(id: first.id, appID: UUID()) == nil, "another app never sees it")
        }
    }

    @Test(
        "a produced batch without an outcome is due for a re-drive after the re-drive time, unless a sender noted it as being sent within that time"
    )
    func batchesDueForRedrive() async throws {
        try await withMigratedStore { client, logger in
            let app = try await AppRepository(client: client, logger: logger).create(
                name: "Re-drives", bundleID: "com.example.redrives")
            let push = UUID()
            _ = try await PushRepository(client: client, logger: logger).create(
                NewPush(
                    id: push, appID: app.id, audienceJSON: "{}", notificationJSON: "{}",
                    payload: Array(#"{"aps":{}}"#.utf8)),
                announcement: .init(topic: "herald.test.pushes", key: nil, value: []))
            // 0: never taken; 1: held, noted a second ago; 2: its sender's last note 5 minutes
            // old (it died); 3: produced a second ago; 4: accounted.
            try await client.query(
                """
                INSERT INTO push_batches (push_id, sequence, first_device, last_device, target_count, produced_at,
                                          emitted_at, sending_copy, sending_since, completed_at)
                VALUES (\(push), 0, 1, 10, 10, now(), now() - interval '10 minutes', NULL, NULL, NULL),
                       (\(push), 1, 11, 20, 10, now(), now() - interval '10 minutes', 'herald.jobs/0/1', now() - interval '1 second', NULL),
                       (\(push), 2, 21, 30, 10, now(), now() - interval '10 minutes', 'herald.jobs/0/2', now() - interval '5 minutes', NULL),
                       (\(push), 3, 31, 40, 10, now(), now() - interval '1 second', NULL, NULL, NULL),
                       (\(push), 4, 41, 50, 10, now(), now() - interval '10 minutes', NULL, NULL, now())
                """, logger: logger)
            let due = try await FanoutProgressRepository(client: client, logger: logger)
                .batchesWithoutOutcome(after: .seconds(60), limit: 10_000)
                .filter { $0.pushID == push }.map(\.sequence)
            #expect(due.sorted() == [0, 2])
        }
    }

    @Test("the outbox publishes in order and keeps records whose publishing failed")
    func outbox() async throws {
        try await withMigratedStore { client, logger in
            let outbox = OutboxRepository(client: client, logger: logger)
            let marker = Array(UUID().uuidString.utf8)
            try await outbox.append(.init(topic: "herald.test", key: marker, value: [1]))
            try await outbox.append(.init(topic: "herald.test", key: marker, value: [2]))

            struct PublishFailed: Error {}
            await #expect(throws: PublishFailed.self) {
                try await outbox.publishBatch(limit: 10_000) { _ in throw PublishFailed() }
            }
            let published = Mutex<[[UInt8]]>([])
            while true {
                let count = try await outbox.publishBatch(limit: 1_000) { records in
                    published.withLock { $0.append(contentsOf: records.filter { $0.key == marker }.map(\.value)) }
                }
                if count == 0 { break }
            }
            #expect(published.withLock { $0 } == [[1], [2]], "both records, in order, after the failed attempt")
            let left = try await client.query(
                "SELECT count(*) FROM outbox WHERE record_key = \(Data(marker)) AND published_at IS NULL",
                logger: logger)
            for try await count in left.decode(Int64.self) { #expect(count == 0) }
        }
    }

    @Test("the schema refuses a 101st tag and a 101st device of an alias, whatever writes them (SQLSTATE HL001, HL002)")
    func deviceLimitsInTheSchema() async throws {
        try await withMigratedStore { client, logger in
            let app = try await AppRepository(client: client, logger: logger).create(
                name: "Limits", bundleID: "com.example.limits")
            let device = try await DeviceRepository(client: client, logger: logger).register(
                DeviceRegistration(
                    appID: app.id, token: randomToken(), environment: .production, topic: app.bundleID, alias: nil,
                    tags: []))
            let tags = (0..<101).map { "tag\($0)" }
            await #expect {
                try await client.query(
                    "INSERT INTO device_tags (app_id, tag, device_id) SELECT \(app.id), tag, \(device.id) FROM unnest(\(tags)) AS tag",
                    logger: logger)
            } throws: { ($0 as? PSQLError)?.serverInfo?[.sqlState] == "HL001" }
            await #expect {
                try await client.query(
                    """
                    INSERT INTO devices (app_id, token, environment, topic, alias)
                    SELECT \(app.id), decode(lpad(to_hex(n), 64, '0'), 'hex'), 'production', \(app.bundleID), 'everyone'
                    FROM generate_series(1, 101) AS n
                    """, logger: logger)
            } throws: { ($0 as? PSQLError)?.serverInfo?[.sqlState] == "HL002" }
            try await client.query(
                """
                INSERT INTO devices (app_id, token, environment, topic, alias)
                SELECT \(app.id), decode(lpad(to_hex(n), 64, '0'), 'hex'), 'production', \(app.bundleID), 'everyone'
                FROM generate_series(1, 100) AS n
                """, logger: logger)
            await #expect {
                try await client.query(
                    "UPDATE devices SET alias = 'everyone' WHERE id = \(device.id)", logger: logger)
            } throws: { ($0 as? PSQLError)?.serverInfo?[.sqlState] == "HL002" }
        }
    }
}
