import Foundation
import HeraldCore
import HeraldDomain
import HeraldStore
import StoreTestSupport
import Testing

@testable import HeraldCenter

/// An app's delivery policy enforced by a running center (docs/delivery-policy.md): devices in
/// their quiet hours and devices at the frequency cap are skipped, counted, never in a batch;
/// transactional pushes are exempt; a rebuilt batch leaves the skipped devices out again.
@Suite("Delivery policy at fan-out", .serialized)
struct DeliveryPolicyFanoutTests {
    @Test func quietHoursAndTheCapSkipDevicesAndTheCountersAddUp() async throws {
        try await withCenterEnvironment { env in
            let ids = try await env.registerMany(300)
            // A third in Tokyo, a third in New York, a third without a time zone (the app's
            // default: UTC). The quiet window is the two hours around Tokyo's time now: 9 hours
            // from UTC, 13 or 14 from New York, so nobody else is in it.
            try await env.database.query(
                """
                UPDATE devices SET time_zone = CASE WHEN id % 3 = 0 THEN 'Asia/Tokyo'
                    WHEN id % 3 = 1 THEN 'America/New_York' END
                WHERE app_id = \(env.app.id)
                """, logger: env.logger)
            let tokyo = Set(ids.filter { $0 % 3 == 0 })
            let tokyoMinute = (Int(Date().timeIntervalSince1970 / 60) + 9 * 60) % 1440
            let policy = DeliveryPolicy(
                quietHours: .init(startMinute: (tokyoMinute + 1380) % 1440, endMinute: (tokyoMinute + 60) % 1440),
                frequencyCap: .init(maxPushes: 1, windowSeconds: 86_400))
            _ = try await AppRepository(client: env.database, logger: env.logger).update(
                id: env.app.id, .init(deliveryPolicy: .some(policy)))
            let reader = try env.startFakeSender()
            let center = try env.startCenter(env.settings(name: "center-policy", pageSize: 120, batchSize: 50))

            // The first campaign: Tokyo is asleep.
            let first = try await env.createPush(audience: .everyone)
            #expect(try await env.eventually { try await env.state(of: first) == .completed })
            var counters = try #require(try await env.pushes.counters(pushID: first.id))
            #expect(counters.targeted == 300 && counters.accepted == 200 && counters.skipped == 100)
            #expect(counters.skippedByReason == ["quiet_hours": Int64(tokyo.count)])
            #expect(counters.isComplete)
            let sent = Set(reader.deviceCounts(push: first).keys)
            #expect(sent.count == 200 && sent.isDisjoint(with: tokyo))

            // A batch of it rebuilt (a re-drive) leaves the Tokyo devices out again, though they
            // are still in the audience.
            let context = try FanoutContext(
                push: first, batchSize: 50, topics: JobTopics(campaign: "unused", transactional: "unused"),
                policy: policy)
            let rebuilt = try await context.rebuild(
                RecordedBatch(
                    pushID: first.id, sequence: 0, firstDevice: ids.lowerBound, lastDevice: ids.lowerBound + 74,
                    targetCount: 50, environment: .production, topic: env.app.bundleID),
                from: env.audience, progress: env.progress)
            #expect(rebuilt.targets.count == 50 && rebuilt.targets.deviceIDs.allSatisfy { !tokyo.contains($0) })

            // The second campaign the same day: everyone who got the first is at the cap.
            let second = try await env.createPush(audience: .everyone)
            #expect(try await env.eventually { try await env.state(of: second) == .completed })
            counters = try #require(try await env.pushes.counters(pushID: second.id))
            #expect(counters.targeted == 300 && counters.accepted == 0 && counters.skipped == 300)
            #expect(counters.skippedByReason == ["capped": 200, "quiet_hours": Int64(tokyo.count)])
            #expect(reader.read(push: second).isEmpty, "not a single batch")

            // A transactional push is exempt from both.
            let sleeper = try #require(tokyo.min())
            let code = try await env.createPush(
                audience: PushAudience(registrationIDs: [sleeper]), priorityClass: .transactional)
            #expect(try await env.eventually { try await env.state(of: code) == .completed })
            counters = try #require(try await env.pushes.counters(pushID: code.id))
            #expect(counters.accepted == 1 && counters.skipped == 0)

            // Without a policy nobody is skipped.
            _ = try await AppRepository(client: env.database, logger: env.logger).update(
                id: env.app.id, .init(deliveryPolicy: .some(nil)))
            let third = try await env.createPush(audience: .everyone)
            #expect(try await env.eventually { try await env.state(of: third) == .completed })
            counters = try #require(try await env.pushes.counters(pushID: third.id))
            #expect(counters.accepted == 300 && counters.skipped == 0)
            await center.stop()
            await reader.stop()
        }
    }

    @Test(
        "skip_unauthorized: devices whose app reported notifications denied are skipped as not_authorized, for any class, and left out of a rebuilt batch"
    )
    func unauthorizedDevicesAreSkipped() async throws {
        try await withCenterEnvironment { env in
            let ids = try await env.registerMany(120)
            try await env.database.query(
                """
                UPDATE devices SET authorization_status = CASE WHEN id % 4 = 0 THEN 'denied'
                    WHEN id % 4 = 1 THEN 'provisional' WHEN id % 4 = 2 THEN 'authorized' END
                WHERE app_id = \(env.app.id)
                """, logger: env.logger)
            let denied = Set(ids.filter { $0 % 4 == 0 })
            let reader = try env.startFakeSender()
            let center = try env.startCenter(env.settings(name: "center-unauthorized", pageSize: 50, batchSize: 20))

            let skipping = try await env.createPush(
                audience: .everyone, priorityClass: .transactional, optionsJSON: #"{"skip_unauthorized":true}"#)
            #expect(try await env.eventually { try await env.state(of: skipping) == .completed })
            var counters = try #require(try await env.pushes.counters(pushID: skipping.id))
            #expect(counters.targeted == 120 && counters.accepted == Int64(120 - denied.count))
            #expect(counters.skippedByReason == ["not_authorized": Int64(denied.count)] && counters.isComplete)
            #expect(Set(reader.deviceCounts(push: skipping).keys).isDisjoint(with: denied))

            let context = try FanoutContext(
                push: skipping, batchSize: 20, topics: JobTopics(campaign: "unused", transactional: "unused"))
            let rebuilt = try await context.rebuild(
                RecordedBatch(
                    pushID: skipping.id, sequence: 0, firstDevice: ids.lowerBound, lastDevice: ids.lowerBound + 25,
                    targetCount: 20, environment: .production, topic: env.app.bundleID),
                from: env.audience, progress: env.progress)
            let range = ids.lowerBound...(ids.lowerBound + 25)
            #expect(Set(rebuilt.targets.deviceIDs) == Set(range.filter { !denied.contains($0) }))

            // Without the option everyone is sent.
            let plain = try await env.createPush(audience: .everyone)
            #expect(try await env.eventually { try await env.state(of: plain) == .completed })
            counters = try #require(try await env.pushes.counters(pushID: plain.id))
            #expect(counters.accepted == 120 && counters.skipped == 0)
            await center.stop()
            await reader.stop()
        }
    }
}
