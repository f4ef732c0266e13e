import Foundation
import HeraldCore
import HeraldDomain
import HeraldStore
import PostgresNIO
import StoreTestSupport
import Synchronization
import Testing

@testable import HeraldCenter

/// Pushes sent in waves by a running center (docs/local-time.md): at a local time in each device's
/// time zone, or holding the app's quiet hours. Time passes by moving the center's clock on to a
/// wave's instant, so no test waits for a real hour.
@Suite("Local-time delivery and held quiet hours at fan-out", .serialized)
struct LocalTimeFanoutTests {
    /// 300 devices: a third in Tokyo, a third in New York, a third without a time zone (UTC, the
    /// app having no default).
    func threeZones(_ env: CenterEnvironment) async throws -> (tokyo: Set<Int64>, newYork: Set<Int64>, none: Set<Int64>)
    {
        let ids = try await env.registerMany(300)
        try await env.database.query(
            """
            UPDATE devices SET time_zone = CASE WHEN id % 3 = 0 THEN 'Asia/Tokyo'
                WHEN id % 3 = 1 THEN 'America/New_York' END
            WHERE app_id = \(env.app.id)
            """, logger: env.logger)
        return (
            Set(ids.filter { $0 % 3 == 0 }), Set(ids.filter { $0 % 3 == 1 }), Set(ids.filter { $0 % 3 == 2 })
        )
    }

    /// Time passes until wave `wave` of `push` is due: the center's clock moves on to it, and the
    /// push's scheduled time (which claims compare with the database's clock) to now.
    func arrive(at wave: Int, of push: Push, _ env: CenterEnvironment, clock: TestClock) async throws {
        let due = try await env.progress.waves(pushID: push.id)[wave].dueAt
        clock.advance(to: due.addingTimeInterval(1))
        try await env.database.query(
            "UPDATE pushes SET scheduled_at = now() WHERE id = \(push.id) AND state = 'scheduled'", logger: env.logger)
    }

    func waiting(_ push: Push, forWave wave: Int, _ env: CenterEnvironment, targeted: Int64) async throws -> Bool {
        try await env.eventually {
            let stored = try await env.claims.push(id: push.id)
            let counters = try await env.pushes.counters(pushID: push.id)
            return stored?.state == .scheduled && stored?.wave == wave && counters?.targeted == targeted
                && counters?.accepted == targeted
        }
    }

    /// Tokyo's wall clock now, to the minute, and its date.
    func tokyoNow() -> PushTiming {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "Asia/Tokyo")!
        let now = calendar.dateComponents([.year, .month, .day, .hour, .minute], from: Date())
        return PushTiming(
            localTime: PushTiming.LocalTime(String(format: "%02d:%02d", now.hour!, now.minute!)),
            localDate: PushTiming.LocalDate(String(format: "%04d-%02d-%02d", now.year!, now.month!, now.day!)))
    }

    @Test func aLocalTimeFansOutZoneByZoneEachDeviceOnce() async throws {
        try await withCenterEnvironment { env in
            let zones = try await threeZones(env)
            let reader = try env.startFakeSender()
            let clock = TestClock()
            let center = try env.startCenter(
                env.settings(name: "center-local-time", pageSize: 40, batchSize: 25), clock: clock.now)

            // The time Tokyo shows now, on Tokyo's date: reached there, nine hours off in UTC,
            // thirteen or fourteen in New York.
            let timing = tokyoNow()
            let push = try await env.createPush(audience: .everyone, timing: timing)
            #expect(try await waiting(push, forWave: 1, env, targeted: 100))
            let waves = try await env.progress.waves(pushID: push.id)
            #expect(waves.map(\.timeZones) == [["Asia/Tokyo"], [""], ["America/New_York"]])
            #expect(waves.map(\.devices) == [100, 100, 100])
            // Tokyo's wave went at once (its minute had begun); the others at that wall-clock time
            // in their own zones.
            let planner = WavePlanner(timing: timing, policy: nil)
            #expect(waves[1].dueAt == planner.instant(in: TimeZone(identifier: "UTC")!, start: Date()))
            #expect(waves[2].dueAt == planner.instant(in: TimeZone(identifier: "America/New_York")!, start: Date()))
            #expect(Set(reader.deviceCounts(push: push).keys) == zones.tokyo)

            // A batch of the second wave rebuilt (a re-drive) reads only the second wave's zones.
            try await arrive(at: 1, of: push, env, clock: clock)
            #expect(try await waiting(push, forWave: 2, env, targeted: 200))
            #expect(Set(reader.deviceCounts(push: push).keys) == zones.tokyo.union(zones.none))
            let stored = try #require(try await env.claims.push(id: push.id))
            let context = try FanoutContext(
                push: stored, batchSize: 25, topics: JobTopics(campaign: "unused", transactional: "unused"),
                waves: try await env.progress.waves(pushID: push.id))
            let second = try #require(try await env.progress.waves(pushID: push.id)[1].firstSequence)
            let rebuilt = try await context.rebuild(
                RecordedBatch(
                    pushID: push.id, sequence: second, firstDevice: 1, lastDevice: .max, targetCount: 25,
                    environment: .production, topic: env.app.bundleID),
                from: env.audience, progress: env.progress)
            #expect(!rebuilt.targets.isEmpty && rebuilt.targets.deviceIDs.allSatisfy { zones.none.contains($0) })

            try await arrive(at: 2, of: push, env, clock: clock)
            #expect(try await env.eventually { try await env.state(of: push) == .completed })
            let counters = try #require(try await env.pushes.counters(pushID: push.id))
            #expect(counters.targeted == 300 && counters.accepted == 300 && counters.isComplete)
            let sent = reader.deviceCounts(push: push)
            #expect(sent.count == 300 && sent.values.allSatisfy { $0 == 1 }, "every device once")
            await center.stop()
            await reader.stop()
        }
    }

    @Test func canceledBetweenWavesTheLaterWavesCountAsCanceled() async throws {
        try await withCenterEnvironment { env in
            _ = try await threeZones(env)
            let reader = try env.startFakeSender()
            let center = try env.startCenter(env.settings(name: "center-local-cancel", pageSize: 40, batchSize: 25))
            let push = try await env.createPush(audience: .everyone, timing: tokyoNow())
            #expect(try await waiting(push, forWave: 1, env, targeted: 100))
            #expect(try await env.cancel(push))
            #expect(
                try await env.eventually {
                    try await env.progress.isCompleted(pushID: push.id)
                })
            let counters = try #require(try await env.pushes.counters(pushID: push.id))
            #expect(counters.targeted == 300 && counters.accepted == 100 && counters.canceled == 200)
            #expect(counters.isComplete)
            await center.stop()
            await reader.stop()
        }
    }

    @Test func quietHoursHeldSendToTheSleepingZoneWhenItsHoursEnd() async throws {
        try await withCenterEnvironment { env in
            let zones = try await threeZones(env)
            // Quiet from an hour before Tokyo's time now to an hour after: nobody else is in them.
            let tokyoMinute = (Int(Date().timeIntervalSince1970 / 60) + 9 * 60) % 1440
            let policy = DeliveryPolicy(
                quietHours: .init(startMinute: (tokyoMinute + 1380) % 1440, endMinute: (tokyoMinute + 60) % 1440))
            _ = try await AppRepository(client: env.database, logger: env.logger).update(
                id: env.app.id, .init(deliveryPolicy: .some(policy)))
            let reader = try env.startFakeSender()
            let clock = TestClock()
            let center = try env.startCenter(
                env.settings(name: "center-hold", pageSize: 40, batchSize: 25), clock: clock.now)

            let held = try await env.createPush(audience: .everyone, timing: PushTiming(quietHours: .hold))
            #expect(try await waiting(held, forWave: 1, env, targeted: 200))
            let waves = try await env.progress.waves(pushID: held.id)
            #expect(waves.map(\.timeZones) == [["", "America/New_York"], ["Asia/Tokyo"]])
            let wait = waves[1].dueAt.timeIntervalSinceNow
            #expect(wait > 55 * 60 && wait <= 60 * 60, "Tokyo's quiet hours end within the hour")
            #expect(reader.deviceCounts(push: held).keys.allSatisfy { !zones.tokyo.contains($0) })

            try await arrive(at: 1, of: held, env, clock: clock)
            #expect(try await env.eventually { try await env.state(of: held) == .completed })
            let counters = try #require(try await env.pushes.counters(pushID: held.id))
            #expect(counters.targeted == 300 && counters.accepted == 300 && counters.skipped == 0)

            // The same push skipping (the default) leaves Tokyo out at once.
            clock.advance(to: Date())
            let skipping = try await env.createPush(audience: .everyone)
            #expect(try await env.eventually { try await env.state(of: skipping) == .completed })
            let skipped = try #require(try await env.pushes.counters(pushID: skipping.id))
            #expect(skipped.accepted == 200 && skipped.skippedByReason == ["quiet_hours": 100])
            await center.stop()
            await reader.stop()
        }
    }
}

/// A wall clock a test moves on: real time plus an offset.
final class TestClock: Sendable {
    private let offset = Mutex<TimeInterval>(0)

    var now: @Sendable () -> Date { { [self] in Date().addingTimeInterval(offset.withLock { $0 }) } }

    /// From now on the clock reads `time` (and runs on from there).
    func advance(to time: Date) {
        offset.withLock { $0 = time.timeIntervalSinceNow }
    }
}
