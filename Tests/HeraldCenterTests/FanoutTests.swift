import Foundation
import HeraldCore
import HeraldDomain
import HeraldRecords
import HeraldStore
import Logging
import StoreTestSupport
import Synchronization
import Testing

@testable import HeraldCenter

@Suite("Msg Center fan-out through the broker", .serialized)
struct FanoutTests {
    @Test func broadcastReachesEveryActiveDeviceOnceAndCountersAddUp() async throws {
        try await withCenterEnvironment { env in
            let ids = try await env.register(250) { number in (number % 2 == 0 ? ["even"] : [], nil) }
            try await env.register(30, app: env.otherApp, seed: 2)
            try await markInvalid([ids[3]], reason: "BadDeviceToken", client: env.database, logger: env.logger)
            let sender = try env.startFakeSender { device in
                device % 10 == 0
                    ? BatchOutcome.Failure(
                        deviceID: device, status: .rejected, reason: "BadDeviceToken", httpStatus: 400,
                        unregisteredAt: nil, attempts: 1) : nil
            }
            let center = try env.startCenter(env.settings(name: "center-a", pageSize: 64, batchSize: 20))
            let push = try await env.createPush(audience: .everyone)
            #expect(try await env.eventually { try await env.state(of: push) == .completed })
            let counts = sender.deviceCounts(push: push)
            #expect(Set(counts.keys) == Set(ids).subtracting([ids[3]]))
            #expect(counts.values.allSatisfy { $0 == 1 })
            for batch in sender.read(push: push) {
                #expect(batch.targets.count <= 20)
                #expect(batch.apnsTopic == env.app.bundleID)
                #expect(batch.collapseID == push.id.uuidString.lowercased())
                #expect(
                    batch.batchID == Herald_V1_JobBatch.batchID(pushID: push.id.recordBytes, sequence: batch.sequence))
            }
            let counters = try #require(try await env.pushes.counters(pushID: push.id))
            let rejected = Int64(ids.filter { $0 % 10 == 0 && $0 != ids[3] }.count)
            #expect(counters.targeted == 249)
            #expect(counters.rejected == rejected && counters.rejectedByReason == ["BadDeviceToken": rejected])
            #expect(counters.accepted == 249 - rejected)
            #expect(counters.isComplete)
            #expect(counters.tokensInvalidated == rejected)
            let failures = try await env.pushes.failurePage(pushID: push.id, after: 0, limit: 1000).map(\.failure)
            #expect(failures.count == Int(rejected) && failures.allSatisfy { $0.reason == "BadDeviceToken" })
            // Invalidated tokens are left out of the next push.
            let next = try await env.createPush(audience: .everyone)
            #expect(try await env.eventually { try await env.state(of: next) == .completed })
            #expect(try await env.pushes.counters(pushID: next.id)?.targeted == 249 - rejected)
            await center.stop()
            await sender.stop()
        }
    }

    @Test("a push's trace goes on every job record, from the center's own span, and into the center's log lines")
    func traceContextGoesOn() async throws {
        try await withCenterEnvironment { env in
            _ = try await env.register(60) { _ in ([], nil) }
            let sender = try env.startFakeSender()
            let captured = Mutex<[String]>([])
            let logger = Logger(label: "test.center.trace") { _ in
                var handler = JSONLogHandler(label: "test.center.trace") { line in captured.withLock { $0.append(line) }
                }
                handler.logLevel = .info
                return handler
            }
            let center = try env.startCenter(env.settings(name: "center-trace", batchSize: 20), logger: logger)
            let traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
            let push = try await env.createPush(audience: .everyone, traceparent: traceparent)
            #expect(try await env.eventually { try await env.state(of: push) == .completed })
            let batches = sender.read(push: push)
            #expect(batches.count == 3)
            let traces = sender.traces
            for batch in batches {
                #expect(traces[batch.batchID]?.traceID == "0af7651916cd43dd8448eb211c80319c")
                #expect(traces[batch.batchID]?.parentID != "b7ad6b7169203331")
            }
            // The accountant reads the outcome records after the fake sender: wait for its line.
            #expect(
                await env.eventually {
                    captured.withLock { $0 }.contains {
                        $0.contains("push completed") && $0.contains(push.id.uuidString)
                    }
                })
            let lines = captured.withLock { $0 }.filter { $0.contains(push.id.uuidString) }
            for message in ["fan-out started", "fan-out finished", "push completed"] {
                let line = lines.first { $0.contains("\"message\":\"\(message)\"") }
                #expect(line?.contains("0af7651916cd43dd8448eb211c80319c") == true, "\(message): \(line ?? "no line")")
            }
            await center.stop()
            await sender.stop()
        }
    }

    @Test("of two centers, exactly one reports the whole system's gauges; the other takes over when it stops")
    func oneCenterReportsTheSystem() async throws {
        try await withCenterEnvironment { env in
            // A certificate credential: its expiry is one of the whole system's gauges.
            let expiry = Date(timeIntervalSince1970: 1_900_000_000)
            try await CredentialRepository(client: env.database, logger: env.logger).upsert(
                .sealing(
                    "-----BEGIN CERTIFICATE-----", appID: env.app.id, environment: .production, kind: .certificate,
                    keyID: nil, teamID: nil, certificateExpiresAt: expiry,
                    cipher: try CredentialCipher(masterKeyBase64: Data(repeating: 7, count: 32).base64EncodedString())))
            let first = try env.startCenter(env.settings(name: "reporter-1"))
            let second = try env.startCenter(env.settings(name: "reporter-2"))
            func reporters() -> [String] {
                [first, second].filter {
                    $0.center.metrics.prometheusText().contains("\nherald_center_system_reporter 1\n")
                }
                .map { $0.center.metrics.prometheusText() }
            }
            #expect(await env.eventually(timeout: .seconds(30)) { reporters().count == 1 })
            // Never both at once, over several sweeps.
            for _ in 0..<10 {
                #expect(reporters().count <= 1)
                try await Task.sleep(for: .milliseconds(100))
            }
            let text = try #require(reporters().first)
            #expect(text.contains(#"herald_pushes{state="sending"}"#))
            #expect(text.contains("herald_outbox_backlog_records "))
            #expect(text.contains("herald_pushes_oldest_unfinished_age_seconds "))
            #expect(text.contains(#"herald_postgres_connections{application="herald",state="#))
            let server = text.split(separator: "\n").first { $0.hasPrefix("herald_postgres_server_connections ") }
            let maximum = text.split(separator: "\n").first { $0.hasPrefix("herald_postgres_max_connections ") }
            #expect(
                (server.flatMap { Double($0.split(separator: " ")[1]) } ?? 0) >= 2,
                "at least the two centers' connections")
            #expect((maximum.flatMap { Double($0.split(separator: " ")[1]) } ?? 0) > 0)
            #expect(text.contains("\nherald_apps_legacy_mode "))
            #expect(
                text.contains(
                    #"herald_apns_certificate_expiry_timestamp_seconds{app="\#(env.app.id.uuidString.lowercased())",environment="production"} 1900000000"#
                ))
            let silent = [first, second].map { $0.center.metrics.prometheusText() }.first {
                !$0.contains("\nherald_center_system_reporter 1\n")
            }
            #expect(silent?.contains("herald_pushes{") == false)
            // The reporter stops: the other takes the lease once it expires (15 s at most).
            let reporterIsFirst = first.center.metrics.prometheusText().contains("\nherald_center_system_reporter 1\n")
            let (stopped, remaining) = reporterIsFirst ? (first, second) : (second, first)
            await stopped.stop()
            #expect(
                await env.eventually(timeout: .seconds(40)) {
                    remaining.center.metrics.prometheusText().contains("\nherald_center_system_reporter 1\n")
                })
            await remaining.stop()
        }
    }

    @Test func twoCentersNeverFanOutOnePushTwice() async throws {
        try await withCenterEnvironment { env in
            let ids = try await env.registerMany(3000)
            let reader = try env.startFakeSender()
            let first = try env.startCenter(env.settings(name: "center-1", pageSize: 500, batchSize: 100))
            let second = try env.startCenter(env.settings(name: "center-2", pageSize: 500, batchSize: 100))
            var pushes: [Push] = []
            for _ in 0..<6 { pushes.append(try await env.createPush(audience: .everyone)) }
            for push in pushes {
                #expect(try await env.eventually { try await env.state(of: push) == .completed })
                let batches = reader.read(push: push)
                #expect(Set(batches.map(\.batchID)).count == batches.count, "no batch produced twice")
                let counts = reader.deviceCounts(push: push)
                #expect(counts.count == 3000 && counts.values.allSatisfy { $0 == 1 })
                #expect(Set(counts.keys) == Set(ids))
                #expect(try await env.pushes.counters(pushID: push.id)?.accepted == 3000)
            }
            let started =
                first.center.metrics.fanoutsStarted.load(ordering: .relaxed)
                + second.center.metrics.fanoutsStarted.load(ordering: .relaxed)
            #expect(started == 6)
            await first.stop()
            await second.stop()
            await reader.stop()
        }
    }

    @Test func scheduledPushFiresOnceAtItsTime() async throws {
        try await withCenterEnvironment { env in
            try await env.register(10)
            let reader = try env.startFakeSender()
            let first = try env.startCenter(env.settings(name: "center-1"))
            let second = try env.startCenter(env.settings(name: "center-2"))
            // Due in an hour: both centers sweep, and neither starts it early.
            let push = try await env.createPush(
                audience: .everyone, state: .scheduled, scheduledAt: Date().addingTimeInterval(3600))
            await first.center.sweep()
            await second.center.sweep()
            #expect(try await env.state(of: push) == .scheduled)
            #expect(reader.read(push: push).isEmpty, "not early")
            // Its time comes (by PostgreSQL's clock, which the claim reads).
            let moved = try await env.database.query(
                "UPDATE pushes SET scheduled_at = now() WHERE id = \(push.id) RETURNING scheduled_at",
                logger: env.logger)
            var due = Date.distantFuture
            for try await at in moved.decode(Date.self) { due = at }
            #expect(try await env.eventually { try await env.state(of: push) == .completed })
            let batches = reader.read(push: push)
            #expect(batches.count == 1)
            #expect(batches.allSatisfy { $0.createdAtMs >= Int64((due.timeIntervalSince1970 * 1000).rounded(.down)) })
            // Once done, the centers' sweeps never start it again.
            await first.center.sweep()
            await second.center.sweep()
            let started =
                first.center.metrics.fanoutsStarted.load(ordering: .relaxed)
                + second.center.metrics.fanoutsStarted.load(ordering: .relaxed)
            #expect(started == 1)
            #expect(reader.read(push: push).count == 1, "not twice")
            await first.stop()
            await second.stop()
            await reader.stop()
        }
    }

    @Test func throttledPushKeepsItsRate() async throws {
        try await withCenterEnvironment { env in
            try await env.registerMany(3000)
            let reader = try env.startFakeSender()
            let center = try env.startCenter(env.settings(name: "center-t", pageSize: 1000, batchSize: 100))
            let push = try await env.createPush(audience: .everyone, throttlePerSecond: 1000)
            #expect(try await env.eventually { try await env.state(of: push) == .completed })
            let batches = reader.read(push: push).sorted { $0.createdAtMs < $1.createdAtMs }
            #expect(batches.count == 30)
            if let firstBatch = batches.first, let last = batches.last, last.createdAtMs > firstBatch.createdAtMs {
                // Everything but the last batch left between the first and the last batch's time.
                let seconds = Double(last.createdAtMs - firstBatch.createdAtMs) / 1000
                let rate = Double(3000 - last.targets.count) / seconds
                #expect(abs(rate - 1000) / 1000 <= 0.10, "rate \(rate)/s for 1000/s")
            }
            await center.stop()
            await reader.stop()
        }
    }

    @Test func cancelInTheMiddleStopsEmissionAndCountsTheRestCanceled() async throws {
        try await withCenterEnvironment { env in
            try await env.registerMany(5000)
            let reader = try env.startFakeSender()
            let center = try env.startCenter(env.settings(name: "center-c", pageSize: 500, batchSize: 100))
            let push = try await env.createPush(audience: .everyone, throttlePerSecond: 1000)
            #expect(
                try await env.eventually {
                    try await env.pushes.push(id: push.id, appID: env.app.id)?.batchesEmitted ?? 0 >= 5
                })
            #expect(try await env.cancel(push))
            #expect(
                try await env.eventually {
                    try await env.pushes.push(id: push.id, appID: env.app.id)?.completedAt != nil
                })
            // The fan-out ends, and every batch it produced reaches the reader; a sweep after it
            // produces nothing more.
            let metrics = center.center.metrics
            #expect(try await env.eventually { metrics.fanoutsRunning.load(ordering: .relaxed) == 0 })
            #expect(try await env.eventually { reader.deviceCounts(push: push).count == metrics.devicesEmittedCount })
            let sentAfterCancel = reader.read(push: push).count
            await center.center.sweep()
            #expect(metrics.fanoutsStarted.load(ordering: .relaxed) == 1)
            #expect(reader.read(push: push).count == sentAfterCancel, "nothing produced after the cancel took effect")
            let counters = try #require(try await env.pushes.counters(pushID: push.id))
            let emitted = Int64(reader.deviceCounts(push: push).count)
            #expect(emitted < 5000)
            #expect(counters.targeted == 5000)
            #expect(counters.canceled == 5000 - counters.accepted)
            #expect(counters.isComplete)
            #expect(try await env.state(of: push) == .canceled)
            await center.stop()
            await reader.stop()
        }
    }

    @Test("an unthrottled fan-out runs at most its window ahead of the outcomes, and goes on as they come back")
    func fanoutHoldsAtItsWindow() async throws {
        try await withCenterEnvironment { env in
            let ids = try await env.registerMany(600)
            // Reads the batches and answers none: no outcome comes back yet.
            let reader = try env.startJobReader()
            var settings = env.settings(name: "center-w", pageSize: 50, batchSize: 25)
            settings.fanoutWindow = 100
            // Held at once closes the audience stream: going on reopens it at the cursor.
            settings.fanoutHoldCloseAfter = .zero
            let center = try env.startCenter(settings)
            let push = try await env.createPush(audience: .everyone)
            let metrics = center.center.metrics
            #expect(try await env.eventually { metrics.fanoutHolds.load(ordering: .relaxed) >= 1 })
            // Two pages recorded (100 without an outcome), the third held.
            #expect(try await env.pushes.counters(pushID: push.id)?.targeted == 100)
            #expect(try await env.eventually { reader.deviceCounts(push: push).count == 100 })
            #expect(try await env.state(of: push) == .fanningOut)
            // Outcomes come back: the fan-out goes on, a window at a time, to the end.
            let sender = try env.startFakeSender()
            #expect(try await env.eventually { try await env.state(of: push) == .completed })
            let counts = sender.deviceCounts(push: push)
            #expect(Set(counts.keys) == Set(ids) && counts.values.allSatisfy { $0 == 1 })
            let counters = try #require(try await env.pushes.counters(pushID: push.id))
            #expect(counters.targeted == 600 && counters.accepted == 600 && counters.isComplete)
            #expect(metrics.fanoutHolds.load(ordering: .relaxed) >= 2)
            await center.stop()
            await sender.stop()
            await reader.stop()
        }
    }

    @Test("a fan-out held at its window sees a cancel at once: what it never sent is counted canceled")
    func cancelWhileHeldAtTheWindow() async throws {
        try await withCenterEnvironment { env in
            try await env.registerMany(600)
            let reader = try env.startJobReader()
            var settings = env.settings(name: "center-wc", pageSize: 50, batchSize: 25)
            settings.fanoutWindow = 100
            let center = try env.startCenter(settings)
            let push = try await env.createPush(audience: .everyone)
            let metrics = center.center.metrics
            #expect(try await env.eventually { metrics.fanoutHolds.load(ordering: .relaxed) >= 1 })
            #expect(try await env.cancel(push))
            #expect(try await env.eventually { metrics.fanoutsRunning.load(ordering: .relaxed) == 0 })
            // The two pages in batches wait for their outcomes; the rest was never sent.
            #expect(try await env.eventually { try await env.pushes.counters(pushID: push.id)?.canceled == 500 })
            let counters = try #require(try await env.pushes.counters(pushID: push.id))
            #expect(counters.targeted == 600 && counters.accepted == 0)
            #expect(try await env.state(of: push) == .canceled)
            #expect(try await env.eventually { reader.deviceCounts(push: push).count == 100 })
            await center.stop()
            await reader.stop()
        }
    }

    @Test func pausedPushHoldsAndResumes() async throws {
        try await withCenterEnvironment { env in
            try await env.registerMany(4000)
            let reader = try env.startFakeSender()
            let center = try env.startCenter(env.settings(name: "center-p", pageSize: 500, batchSize: 100))
            let push = try await env.createPush(audience: .everyone, throttlePerSecond: 1000)
            func emitted() async throws -> Int {
                try await env.pushes.push(id: push.id, appID: env.app.id)?.batchesEmitted ?? 0
            }
            func targeted() async throws -> Int64 { try await env.pushes.counters(pushID: push.id)?.targeted ?? 0 }
            #expect(try await env.eventually { try await emitted() >= 1 })
            #expect(try await env.claims.setPaused(true, pushID: push.id, appID: env.app.id))
            // The page being paced may finish its current batch; then the fan-out gives its slot
            // up, and every batch it produced reaches the reader.
            let metrics = center.center.metrics
            #expect(try await env.eventually { metrics.fanoutsRunning.load(ordering: .relaxed) == 0 })
            #expect(try await env.eventually { reader.deviceCounts(push: push).count == metrics.devicesEmittedCount })
            let held = reader.deviceCounts(push: push).count
            let heldTargeted = try await targeted()
            // Sweeps while it is paused claim nothing.
            await center.center.sweep()
            await center.center.sweep()
            #expect(metrics.fanoutsStarted.load(ordering: .relaxed) == 1 && metrics.devicesEmittedCount == held)
            #expect(reader.deviceCounts(push: push).count == held, "no batch while paused")
            #expect(try await targeted() == heldTargeted, "no page while paused")
            #expect(try await env.state(of: push) == .fanningOut)
            #expect(try await env.claims.setPaused(false, pushID: push.id, appID: env.app.id))
            #expect(try await env.eventually { try await env.state(of: push) == .completed })
            #expect(reader.deviceCounts(push: push).count == 4000)
            await center.stop()
            await reader.stop()
        }
    }

    @Test func recordingAPageTellsWhetherThePushIsPaused() async throws {
        // An unthrottled fan-out learns of a pause from recording its page, not from a look-up.
        try await withCenterEnvironment { env in
            let push = try await env.createPush(audience: .everyone)
            #expect(try await env.claims.claim([push.id], by: "center-x", lease: .seconds(30)).map(\.id) == [push.id])
            func batch(_ sequence: Int) -> RecordedBatch {
                RecordedBatch(
                    pushID: push.id, sequence: sequence, firstDevice: Int64(sequence * 10 + 1),
                    lastDevice: Int64(sequence * 10 + 10),
                    targetCount: 10, environment: .production, topic: env.app.bundleID)
            }
            #expect(
                try await env.progress.recordPage(pushID: push.id, by: "center-x", cursor: 10, batches: [batch(0)])
                    == .recorded(paused: false))
            #expect(try await env.claims.setPaused(true, pushID: push.id, appID: env.app.id))
            #expect(
                try await env.progress.recordPage(pushID: push.id, by: "center-x", cursor: 20, batches: [batch(1)])
                    == .recorded(paused: true))
            #expect(
                try await env.progress.recordPage(pushID: push.id, by: "center-y", cursor: 30, batches: [batch(2)])
                    == .claimLost)
        }
    }

    @Test func recallReachesExactlyTheDevicesThatAccepted() async throws {
        try await withCenterEnvironment { env in
            let ids = try await env.register(120)
            let rejected = Set(ids.enumerated().filter { $0.offset % 4 == 0 }.map(\.element))
            let reader = try env.startFakeSender { device in
                rejected.contains(device)
                    ? BatchOutcome.Failure(
                        deviceID: device, status: .rejected, reason: "TooManyRequests", httpStatus: 429,
                        unregisteredAt: nil, attempts: 8) : nil
            }
            let center = try env.startCenter(env.settings(name: "center-r", pageSize: 50, batchSize: 25))
            let original = try await env.createPush(audience: .everyone)
            #expect(try await env.eventually { try await env.state(of: original) == .completed })
            let recall = try await env.createPush(audience: .everyone, recallOf: original.id)
            #expect(try await env.eventually { try await env.state(of: recall) == .completed })
            let reached = Set(reader.deviceCounts(push: recall).keys)
            #expect(reached == Set(ids).subtracting(rejected))
            #expect(try await env.pushes.counters(pushID: recall.id)?.targeted == Int64(ids.count - rejected.count))
            await center.stop()
            await reader.stop()
        }
    }

    @Test(
        "devices reached over their long connection count delivered_online, the identity holds, and a recall reaches them as well as those APNs accepted"
    )
    func deliveredOnlineCountsAndIsRecalled() async throws {
        try await withCenterEnvironment { env in
            let ids = try await env.register(90)
            let online = Set(ids.enumerated().filter { $0.offset % 3 == 0 }.map(\.element))
            let rejected = Set(ids.enumerated().filter { $0.offset % 3 == 1 && $0.offset % 2 == 0 }.map(\.element))
            let reader = try env.startFakeSender(online: online) { device in
                rejected.contains(device)
                    ? BatchOutcome.Failure(
                        deviceID: device, status: .rejected, reason: "TooManyRequests", httpStatus: 429,
                        unregisteredAt: nil, attempts: 8) : nil
            }
            let center = try env.startCenter(env.settings(name: "center-o", pageSize: 40, batchSize: 20))
            let original = try await env.createPush(audience: .everyone)
            #expect(try await env.eventually { try await env.state(of: original) == .completed })
            let counters = try #require(try await env.pushes.counters(pushID: original.id))
            #expect(counters.deliveredOnline == Int64(online.count))
            #expect(counters.accepted == Int64(ids.count - online.count - rejected.count))
            #expect(counters.rejected == Int64(rejected.count) && counters.isComplete)
            let recall = try await env.createPush(audience: .everyone, recallOf: original.id)
            #expect(try await env.eventually { try await env.state(of: recall) == .completed })
            #expect(Set(reader.deviceCounts(push: recall).keys) == Set(ids).subtracting(rejected))
            await center.stop()
            await reader.stop()
        }
    }

    @Test(
        "an online-only push: its batches say so, the devices not reached are counted skipped offline, and the identity holds"
    )
    func onlineOnlyPushCountsTheRestSkippedOffline() async throws {
        try await withCenterEnvironment { env in
            let ids = try await env.register(60)
            let online = Set(ids.enumerated().filter { $0.offset % 4 == 0 }.map(\.element))
            let reader = try env.startFakeSender(online: online)
            let center = try env.startCenter(env.settings(name: "center-n", pageSize: 40, batchSize: 20))
            let push = try await env.createPush(audience: .everyone, channel: .online)
            let apns = try await env.createPush(audience: .everyone, channel: .apns)
            #expect(try await env.eventually { try await env.state(of: push) == .completed })
            #expect(try await env.eventually { try await env.state(of: apns) == .completed })
            let counters = try #require(try await env.pushes.counters(pushID: push.id))
            #expect(counters.targeted == Int64(ids.count) && counters.deliveredOnline == Int64(online.count))
            #expect(counters.skipped == Int64(ids.count - online.count) && counters.accepted == 0)
            #expect(counters.skippedByReason == ["offline": Int64(ids.count - online.count)] && counters.isComplete)
            #expect(!reader.read(push: push).isEmpty && reader.read(push: push).allSatisfy { $0.channel == .online })
            #expect(!reader.read(push: apns).isEmpty && reader.read(push: apns).allSatisfy { $0.channel == .apns })
            await center.stop()
            await reader.stop()
        }
    }

    @Test(
        "a batch that never gets an outcome is re-driven HERALD_CENTER_MAX_REDRIVES times, then ended Undeliverable: counted, and its push completes"
    )
    func batchWithoutOutcomeEndsUndeliverable() async throws {
        try await withCenterEnvironment { env in
            let ids = try await env.register(250)
            // Reads the batches and never answers: a sender that loses every outcome.
            let reader = try env.startJobReader()
            var settings = env.settings(name: "center-u", pageSize: 100, batchSize: 100)
            settings.redriveAfter = .seconds(1)
            settings.maxRedrives = 1
            let center = try env.startCenter(settings)
            let push = try await env.createPush(audience: .everyone)
            #expect(try await env.eventually(timeout: .seconds(90)) { try await env.state(of: push) == .completed })
            let counters = try #require(try await env.pushes.counters(pushID: push.id))
            #expect(counters.targeted == 250 && counters.rejected == 250 && counters.isComplete)
            #expect(counters.rejectedByReason == ["Undeliverable": 250])
            // Produced once and re-driven once: each batch went out twice, to every device.
            let copiesOfEach = {
                Dictionary(grouping: reader.read(push: push), by: \.batchID).mapValues(\.count)
            }
            #expect(await env.eventually { copiesOfEach().count == 3 && copiesOfEach().values.allSatisfy { $0 == 2 } })
            #expect(Set(reader.deviceCounts(push: push).keys) == Set(ids))
            let metrics = center.center.metrics.prometheusText()
            #expect(metrics.contains("herald_center_batches_undeliverable_total 3\n"))
            #expect(metrics.contains("herald_center_batches_redriven_total 3\n"))
            await center.stop()
            await reader.stop()
        }
    }
}
