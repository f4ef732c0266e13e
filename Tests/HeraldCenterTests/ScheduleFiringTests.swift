import Foundation
import HeraldCore
import HeraldDomain
import HeraldStore
import StoreTestSupport
import Testing

@testable import HeraldCenter

/// Schedules fired by running centers (docs/schedules.md): a due occurrence becomes one push
/// however many centers sweep, and that push is fanned out like any other.
@Suite("Schedules fired by herald-center", .serialized)
struct ScheduleFiringTests {
    @Test func twoCentersFireADueOccurrenceOnceAndItIsSent() async throws {
        try await withCenterEnvironment { env in
            let devices = try await env.registerMany(50)
            let schedules = ScheduleRepository(client: env.database, logger: env.logger)
            // A daily schedule whose first occurrence was this minute (so it is due now).
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = TimeZone(identifier: "UTC")!
            let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute], from: Date())
            let start = try #require(
                Recurrence.LocalStart(
                    String(
                        format: "%04d-%02d-%02dT%02d:%02d", parts.year!, parts.month!, parts.day!, parts.hour!,
                        parts.minute!)))
            let rule = try Recurrence(rrule: "FREQ=DAILY")
            let utc = TimeZone(identifier: "UTC")!
            let first = rule.occurrences(start: start, timeZone: utc, after: .distantPast, limit: 1).first
            let schedule = try await schedules.create(
                id: UUID(), appID: env.app.id, name: "daily", rrule: rule.rrule, timeZone: "UTC",
                startsAtLocal: start.text, pushRequestJSON: "{}",
                blueprint: PushBlueprint(
                    audienceJSON: PushAudience.everyone.json, notificationJSON: "{}", optionsJSON: "{}",
                    payload: Array(#"{"aps":{"alert":"daily"}}"#.utf8), template: nil, pushType: "alert",
                    priority: 10, priorityClass: .campaign, collapseID: nil, timeToLiveSeconds: nil,
                    throttlePerSecond: nil, finishWithinSeconds: nil),
                lateWindowSeconds: 3600, next: first)
            let reader = try env.startFakeSender()
            let one = try env.startCenter(env.settings(name: "center-one"))
            let two = try env.startCenter(env.settings(name: "center-two"))
            func occurrencePushes() async throws -> [PushProgress] {
                try await env.pushes.progressList(
                    appID: env.app.id, state: nil, before: nil, limit: 10, scheduleID: schedule.id)
            }
            #expect(try await env.eventually { try await occurrencePushes().first?.push.state == .completed })
            // Both centers fire schedules again (as their loops do every 100 ms): still one push.
            for _ in 0..<2 {
                try await one.center.fireSchedules()
                try await two.center.fireSchedules()
            }
            let pushes = try await occurrencePushes()
            #expect(pushes.count == 1)
            let push = try #require(pushes.first)
            #expect(push.counters.accepted == Int64(devices.count))
            #expect(reader.deviceCounts(push: push.push).count == devices.count)
            let stored = try #require(try await schedules.schedule(id: schedule.id, appID: env.app.id))
            #expect(stored.pushesCreated == 1)
            #expect(stored.nextOccurrenceAt == first.map { $0.addingTimeInterval(86_400) })
            await one.stop()
            await two.stop()
            await reader.stop()
        }
    }

    @Test("a due schedule whose key has ended since it was saved pauses instead of firing")
    func aScheduleWhoseKeyEndedPauses() async throws {
        try await withCenterEnvironment { env in
            let schedules = ScheduleRepository(client: env.database, logger: env.logger)
            let keys = APIKeyRepository(client: env.database, logger: env.logger)
            let key = try await keys.create(appID: env.app.id, kind: .server, key: "hs_" + UUID().uuidString)
            let keyID = key.id
            let schedule = try await schedules.create(
                id: UUID(), appID: env.app.id, name: "rotated away", rrule: "FREQ=DAILY", timeZone: "UTC",
                startsAtLocal: "2030-01-01T08:00", pushRequestJSON: "{}",
                blueprint: PushBlueprint(
                    audienceJSON: PushAudience.everyone.json, notificationJSON: "{}", optionsJSON: "{}",
                    payload: Array(#"{"aps":{"alert":"x"}}"#.utf8), template: nil, pushType: "alert",
                    priority: 10, priorityClass: .campaign, collapseID: nil, timeToLiveSeconds: nil,
                    throttlePerSecond: nil, finishWithinSeconds: nil),
                lateWindowSeconds: 3600, next: Date().addingTimeInterval(-1), savedBy: keyID)
            // The key's rotation grace ran out a moment ago: nothing revoked it by hand.
            try await env.database.query(
                "UPDATE api_keys SET revoked_at = now() - interval '1 second' WHERE id = \(keyID)", logger: env.logger)
            let fired = try await schedules.fireDue(now: Date(), pushesTopic: "unused", limit: 10)
            #expect(fired.map(\.skipReason) == [ScheduleRepository.keyEndedReason])
            #expect(fired.first?.pushID == nil)
            let stored = try #require(try await schedules.schedule(id: schedule.id, appID: env.app.id))
            #expect(stored.paused)
            #expect(try await schedules.fireDue(now: Date(), pushesTopic: "unused", limit: 10).isEmpty)
        }
    }
}
