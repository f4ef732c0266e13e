import Foundation
import HeraldCore
import HeraldStore
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
            let renamed = try await apps.update(id: app.id, name: "Shop 2", bundleID: nil)
            #expect(renamed?.name == "Shop 2")
            #expect(renamed?.bundleID == "com.example.shop")
            #expect(try await apps.update(id: UUID(), name: "x", bundleID: nil) == nil)
            #expect(try await apps.delete(id: app.id))
            #expect(try await apps.app(id: app.id) == nil)
            #expect(try await !apps.delete(id: app.id))
        }
    }

    @Test("API keys are stored hashed, authenticate by the key, and stop working when revoked")
    func apiKeys() async throws {
        try await withMigratedStore { client, logger in
            let app = try await AppRepository(client: client, logger: logger).create(name: "Keys", bundleID: "com.example.keys")
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

    @Test("APNs credentials are stored sealed, one per environment, and open only with the master key")
    func credentials() async throws {
        try await withMigratedStore { client, logger in
            let app = try await AppRepository(client: client, logger: logger).create(name: "Creds", bundleID: "com.example.creds")
            let repository = CredentialRepository(client: client, logger: logger)
            let cipher = try CredentialCipher(masterKeyBase64: Data((0..<32).map { UInt8($0) }).base64EncodedString())
            let privateKey = Array("-----BEGIN PRIVATE KEY-----\nMIGH...\n-----END PRIVATE KEY-----\n".utf8)
            let id = UUID()
            let sealed = try cipher.seal(privateKey, owner: "\(app.id)/\(id)")
            #expect(sealed != privateKey)
            try await repository.upsert(APNsCredentialRecord(id: id, appID: app.id, environment: .sandbox, kind: .token,
                                                             keyID: "ABC123DEFG", teamID: "TEAM123456", sealedSecret: sealed))
            var stored = try await repository.credentials(appID: app.id)
            #expect(stored.count == 1)
            #expect(try cipher.open(stored[0].sealedSecret, owner: "\(app.id)/\(id)") == privateKey)
            #expect(throws: CredentialCipher.CannotOpen.self) { try cipher.open(stored[0].sealedSecret, owner: "\(UUID())/\(id)") }

            // A second credential for the same environment replaces the first.
            let replacement = UUID()
            try await repository.upsert(APNsCredentialRecord(id: replacement, appID: app.id, environment: .sandbox, kind: .token,
                                                             keyID: "NEWKEY1234", teamID: "TEAM123456",
                                                             sealedSecret: try cipher.seal(privateKey, owner: "\(app.id)/\(replacement)")))
            stored = try await repository.credentials(appID: app.id)
            #expect(stored.map(\.keyID) == ["NEWKEY1234"])
            #expect(try await repository.delete(appID: app.id, environment: .sandbox))
            #expect(try await repository.credentials(appID: app.id).isEmpty)
        }
    }

    @Test("a device registered twice with the same token stays one row, keeps its id and is reactivated")
    func deviceRegistration() async throws {
        try await withMigratedStore { client, logger in
            let app = try await AppRepository(client: client, logger: logger).create(name: "Devices", bundleID: "com.example.devices")
            let devices = DeviceRepository(client: client, logger: logger)
            let token = randomToken()
            let first = try await devices.register(DeviceRegistration(
                appID: app.id, token: token, environment: .sandbox, topic: app.bundleID, alias: "alice",
                tags: ["news", "vip"], locale: "en_GB", timeZone: "Europe/London"))
            #expect(first.isNew)
            #expect(try await devices.invalidate(deviceID: first.id, reason: "BadDeviceToken", unregisteredAt: nil))
            #expect(try await devices.device(id: first.id, appID: app.id)?.status == .invalid)

            let second = try await devices.register(DeviceRegistration(
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
            let app = try await AppRepository(client: client, logger: logger).create(name: "Tags", bundleID: "com.example.tags")
            let devices = DeviceRepository(client: client, logger: logger)
            let a = try await devices.register(DeviceRegistration(appID: app.id, token: randomToken(), environment: .production,
                                                                  topic: app.bundleID, tags: ["a", "b"]))
            let b = try await devices.register(DeviceRegistration(appID: app.id, token: randomToken(), environment: .production,
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
        try await withMigratedStore { client, logger in
            let app = try await AppRepository(client: client, logger: logger).create(name: "410", bundleID: "com.example.gone")
            let devices = DeviceRepository(client: client, logger: logger)
            let registration = DeviceRegistration(appID: app.id, token: randomToken(), environment: .production, topic: app.bundleID)
            let device = try await devices.register(registration)
            let registeredAt = try #require(try await devices.device(id: device.id, appID: app.id)).registeredAt

            // APNs says the token died before the device registered: keep it.
            #expect(try await !devices.invalidate(deviceID: device.id, reason: "Unregistered",
                                                  unregisteredAt: registeredAt.addingTimeInterval(-60)))
            #expect(try await devices.device(id: device.id, appID: app.id)?.status == .active)
            // APNs says it died after: invalidate it.
            #expect(try await devices.invalidate(deviceID: device.id, reason: "Unregistered",
                                                 unregisteredAt: registeredAt.addingTimeInterval(60)))
            let invalid = try #require(try await devices.device(id: device.id, appID: app.id))
            #expect(invalid.status == .invalid)
            #expect(invalid.invalidReason == "Unregistered")
            // Purging invalid tokens older than a cutoff removes it.
            #expect(try await devices.purgeInvalid(before: Date().addingTimeInterval(3600)) >= 1)
            #expect(try await devices.device(id: device.id, appID: app.id) == nil)
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
                let id = try await devices.register(DeviceRegistration(
                    appID: app.id, token: randomToken(), environment: index % 5 == 0 ? .sandbox : .production, topic: app.bundleID)).id
                _ = try await devices.register(DeviceRegistration(appID: other.id, token: randomToken(), environment: .production,
                                                                  topic: other.bundleID))
                if index % 7 == 3 {
                    _ = try await devices.invalidate(deviceID: id, reason: "BadDeviceToken", unregisteredAt: nil)
                } else {
                    expected.append(id)
                }
            }
            let audiences = AudienceRepository(client: client, logger: logger)
            var seen: [Int64] = []
            var cursor: Int64 = 0
            while true {
                let page = try await audiences.page(AudienceSelection(appID: app.id, audience: .everyone), after: cursor, limit: 4).targets
                guard let last = page.last else { break }
                #expect(page.count <= 4)
                seen.append(contentsOf: page.map(\.deviceID))
                cursor = last.deviceID
            }
            #expect(seen == expected)
            let sandbox = try await audiences.page(AudienceSelection(appID: app.id, audience: PushAudience(all: true, environment: .sandbox)),
                                                   after: 0, limit: 100).targets
            #expect(sandbox.allSatisfy { $0.environment == .sandbox })
            #expect(Set(sandbox.map(\.deviceID)).isSubset(of: Set(expected)))
            #expect(sandbox.count == 4, "indexes 0, 5, 15 and 20 are sandbox; 10 is invalid (10 % 7 == 3)")
        }
    }

    @Test("pushes written together: each stored once with its counters and announcement, idempotency keys honoured across a batch, a bad push fails alone")
    func pushesWrittenTogether() async throws {
        try await withMigratedStore { client, logger in
            let app = try await AppRepository(client: client, logger: logger).create(name: "Batched", bundleID: "com.example.batched")
            // One writer at a time: whatever arrives meanwhile waits and is written together.
            let writer = PushWriter(client: client, logger: logger, maximumWriters: 1, maximumBatch: 64)
            let later = Date().addingTimeInterval(3600)
            func push(_ number: Int, app appID: UUID, key: String? = nil) -> NewPush {
                var push = NewPush(id: UUID(), appID: appID, audienceJSON: #"{"all": true}"#, notificationJSON: #"{"n": \#(number)}"#,
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
            enum Answer { case created(UUID, Bool), failed(UUID) }
            let answers = await withTaskGroup(of: Answer.self) { group in
                for push in plain + sameKey + unknownApp {
                    group.addTask {
                        do {
                            let (stored, created) = try await writer.create(push, announcement: .init(topic: "herald.pushes", key: Array(push.id.uuidString.utf8), value: [1]))
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
                #expect(stored.definition.expiresAt.map { abs($0.timeIntervalSince(later)) < 0.001 } ?? (original.expiresAt == nil))
                #expect((stored.definition.scheduledAt == nil) == (original.scheduledAt == nil))
            }
            let rows = try await client.query("""
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
            let app = try await AppRepository(client: client, logger: logger).create(name: "Pushes", bundleID: "com.example.pushes")
            let pushes = PushRepository(client: client, logger: logger)
            let key = "order-\(UUID())"
            let first = NewPush(id: UUID(), appID: app.id, audienceJSON: #"{"all": true}"#, notificationJSON: #"{"alert": "hi"}"#,
                                payload: Array(#"{"aps":{"alert":"hi"}}"#.utf8), collapseID: "c1", idempotencyKey: key)
            let created = try await pushes.create(first, announcement: .init(topic: "herald.pushes", key: [1], value: [2, 3]))
            #expect(created.created)
            #expect(created.push.id == first.id)
            #expect(created.push.state == .accepted)
            #expect(created.push.definition.payload == first.payload)

            var retry = first
            retry.id = UUID()
            let again = try await pushes.create(retry, announcement: .init(topic: "herald.pushes", key: [9], value: [9]))
            #expect(!again.created)
            #expect(again.push.id == first.id)
            let outboxRows = try await client.query("SELECT count(*) FROM outbox WHERE record_key = \(Data([9]))", logger: logger)
            for try await count in outboxRows.decode(Int64.self) { #expect(count == 0, "a duplicate push writes no outbox record") }

            // Fan-out progress: a batch recorded twice counts once.
            #expect(try await pushes.transition(id: first.id, from: [.accepted], to: .fanningOut))
            #expect(try await pushes.recordBatch(pushID: first.id, sequence: 0, firstDevice: 1, lastDevice: 500, targetCount: 500))
            #expect(try await !pushes.recordBatch(pushID: first.id, sequence: 0, firstDevice: 1, lastDevice: 500, targetCount: 500))
            #expect(try await pushes.recordBatch(pushID: first.id, sequence: 1, firstDevice: 501, lastDevice: 700, targetCount: 150))
            let progressed = try #require(try await pushes.push(id: first.id, appID: app.id))
            #expect(progressed.fanoutCursor == 700)
            #expect(progressed.batchesEmitted == 2)
            #expect(try await pushes.openBatches(pushID: first.id) == [0, 1])
            #expect(try await pushes.completeBatch(pushID: first.id, sequence: 0))
            #expect(try await pushes.openBatches(pushID: first.id) == [1])

            // Outcomes add up.
            var delta = PushCounters()
            delta.accepted = 600
            delta.rejected = 40
            delta.rejectedByReason = ["BadDeviceToken": 30, "Unregistered": 10]
            try await pushes.addToCounters(pushID: first.id, delta)
            var more = PushCounters()
            more.rejected = 5
            more.expired = 3
            more.canceled = 2
            more.rejectedByReason = ["Unregistered": 5]
            try await pushes.addToCounters(pushID: first.id, more)
            let counters = try #require(try await pushes.counters(pushID: first.id))
            #expect(counters.targeted == 650)
            #expect(counters.rejectedByReason == ["BadDeviceToken": 30, "Unregistered": 15])
            #expect(counters.isComplete)

            try await pushes.recordFailures([
                FailedDelivery(pushID: first.id, deviceID: 7, status: .rejected, reason: "BadDeviceToken", httpStatus: 400, attempts: 1),
                FailedDelivery(pushID: first.id, deviceID: 3, status: .expired, reason: nil, httpStatus: nil, attempts: 4),
            ])
            let failures = try await pushes.failures(pushID: first.id)
            #expect(failures.map(\.deviceID) == [3, 7])
            #expect(failures[0].reason == nil && failures[0].attempts == 4)
            #expect(failures[1].httpStatus == 400)

            #expect(try await pushes.transition(id: first.id, from: [.fanningOut, .sending], to: .completed))
            #expect(try await !pushes.transition(id: first.id, from: [.fanningOut], to: .canceled), "a completed push is not canceled")
            #expect(try await pushes.list(appID: app.id).map(\.id) == [first.id])
            #expect(try await pushes.list(appID: app.id, state: .canceled).isEmpty)
            #expect(try await pushes.push(id: first.id, appID: UUID()) == nil, "another app never sees it")
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
            #expect(try await outbox.unpublishedCount() == 0)
        }
    }

    @Test("a due schedule fires once even when two centers look at the same time")
    func schedules() async throws {
        try await withMigratedStore { client, logger in
            let app = try await AppRepository(client: client, logger: logger).create(name: "Sched", bundleID: "com.example.sched")
            let schedules = ScheduleRepository(client: client, logger: logger)
            let now = Date()
            let schedule = Schedule(id: UUID(), appID: app.id, name: "morning", pushTemplateJSON: #"{"alert":"Good morning"}"#,
                                    recurrence: .daily, timeOfDaySeconds: 8 * 3600, nextFireAt: now.addingTimeInterval(-1))
            try await schedules.create(schedule)
            let stored = try #require(try await schedules.schedule(id: schedule.id, appID: app.id))
            #expect(stored.recurrence == .daily && stored.timeOfDaySeconds == 8 * 3600 && stored.name == "morning")
            // PostgreSQL keeps microseconds.
            #expect(stored.nextFireAt.map { abs($0.timeIntervalSince(schedule.nextFireAt!)) < 0.001 } == true)

            let fired = try await withThrowingTaskGroup(of: [UUID].self) { group in
                for _ in 0..<2 {
                    group.addTask {
                        try await schedules.fireDue(now: now, limit: 1000) { _ in now.addingTimeInterval(86_400) }
                            .map(\.id).filter { $0 == schedule.id }
                    }
                }
                var all: [UUID] = []
                for try await ids in group { all += ids }
                return all
            }
            #expect(fired == [schedule.id])
            let next = try #require(try await schedules.schedule(id: schedule.id, appID: app.id))
            #expect(next.nextFireAt.map { abs($0.timeIntervalSince(now.addingTimeInterval(86_400))) < 0.01 } == true)
            #expect(try await schedules.disable(id: schedule.id, appID: app.id))
            #expect(try await schedules.schedule(id: schedule.id, appID: app.id)?.enabled == false)
        }
    }
}
