import Foundation
import HeraldDomain
import HeraldStore
import PostgresNIO
import Testing

/// Firing schedules with the clock in the test's hand (no test waits for a real hour): due
/// occurrences become pushes once, those found due past the late window are skipped with a
/// reason, the schedule moves on to its next occurrence.
@Suite("schedules: firing due occurrences")
struct ScheduleRepositoryTests {
    /// A broadcast of `body` with an alert push's defaults.
    static func blueprint(body: String = "", collapseID: String? = nil, ttl: Int? = nil) -> PushBlueprint {
        PushBlueprint(
            audienceJSON: #"{"all":true}"#,
            notificationJSON: body.isEmpty ? "{}" : #"{"alert":{"body":"\#(body)"}}"#, optionsJSON: "{}",
            payload: Array((body.isEmpty ? "{}" : #"{"aps":{"alert":{"body":"\#(body)"}}}"#).utf8), template: nil,
            pushType: "alert", priority: 10, priorityClass: .campaign, collapseID: collapseID, timeToLiveSeconds: ttl,
            throttlePerSecond: nil, finishWithinSeconds: nil)
    }

    static func iso(_ date: Date) -> String { ISO8601DateFormatter().string(from: date) }
    static func date(_ text: String) -> Date? { ISO8601DateFormatter().date(from: text) }

    @Test(
        "after a 13-hour outage a six-hourly schedule skips the occurrences past its late window, sends the one within it, once, and waits for the next"
    )
    func outageSkipsAndSendsOnce() async throws {
        try await withEmptyDatabase { client, logger in
            try await MigrationRunner(client: client, logger: logger).migrate()
            let app = try await AppRepository(client: client, logger: logger).create(
                name: "schedules", bundleID: "com.herald.schedules")
            let schedules = ScheduleRepository(client: client, logger: logger)
            let rule = try Recurrence(rrule: "FREQ=DAILY;BYHOUR=0,6,12,18;BYMINUTE=0")
            let start = try #require(Recurrence.LocalStart("2026-11-01T00:00"))
            let utc = try #require(TimeZone(identifier: "UTC"))
            let midnight = try #require(Self.date("2026-11-20T00:00:00Z"))
            // Its next occurrence is 20 November, 00:00; the center comes back at 13:30.
            let first = try #require(
                rule.occurrences(start: start, timeZone: utc, after: midnight.addingTimeInterval(-1), limit: 1).first)
            let blueprint = Self.blueprint(body: "every six hours", ttl: 3600)
            let schedule = try await schedules.create(
                id: UUID(), appID: app.id, name: "six-hourly", rrule: rule.rrule, timeZone: "UTC",
                startsAtLocal: start.text, pushRequestJSON: "{}", blueprint: blueprint, lateWindowSeconds: 7200,
                next: first)
            let now = midnight.addingTimeInterval(13.5 * 3600)
            let fired = try await schedules.fireDue(now: now, pushesTopic: "herald.test.schedules", limit: 100)
            #expect(
                fired.map { Self.iso($0.occurrence) } == [
                    "2026-11-20T00:00:00Z", "2026-11-20T06:00:00Z", "2026-11-20T12:00:00Z",
                ])
            #expect(fired.map { $0.skipReason != nil } == [true, true, false])
            #expect(
                fired[0].skipReason?.contains("48600 s after its time, past the schedule's late window of 7200 s")
                    == true)
            let pushID = try #require(fired[2].pushID)
            #expect(fired[2].created)
            // Fired again at the same moment (another center, a retry): nothing more.
            #expect(try await schedules.fireDue(now: now, pushesTopic: "herald.test.schedules", limit: 100).isEmpty)

            let stored = try #require(try await schedules.schedule(id: schedule.id, appID: app.id))
            #expect(stored.nextOccurrenceAt.map(Self.iso) == "2026-11-20T18:00:00Z")
            #expect(stored.pushesCreated == 1 && stored.occurrencesSkipped == 2)
            #expect(stored.lastSkippedAt.map(Self.iso) == "2026-11-20T06:00:00Z")
            // The occurrence is a normal push: its own id, expiry from its occurrence, and it
            // names its schedule.
            let push = try #require(
                try await PushRepository(client: client, logger: logger).push(id: pushID, appID: app.id))
            #expect(push.scheduleID == schedule.id)
            #expect(push.occurrenceAt.map(Self.iso) == "2026-11-20T12:00:00Z")
            #expect(push.definition.expiresAt.map(Self.iso) == "2026-11-20T13:00:00Z")
            #expect(
                push.definition.idempotencyKey
                    == PushBlueprint.idempotencyKey(scheduleID: schedule.id, occurrence: fired[2].occurrence))
            #expect(push.state == .accepted)
            let listed = try await PushRepository(client: client, logger: logger).progressList(
                appID: app.id, state: nil, before: nil, limit: 10, scheduleID: schedule.id)
            #expect(listed.map(\.push.id) == [pushID])
            // Its "created" event waits in the outbox for the relay.
            var announced = 0
            for try await count in try await client.query(
                "SELECT count(*) FROM outbox WHERE topic = 'herald.test.schedules'"
            ).decode(Int64.self) { announced = Int(count) }
            #expect(announced == 1)
        }
    }

    @Test("a schedule whose stored push cannot be read is paused with why, and the next due schedule still fires")
    func unreadableScheduleDoesNotBlock() async throws {
        try await withEmptyDatabase { client, logger in
            try await MigrationRunner(client: client, logger: logger).migrate()
            let app = try await AppRepository(client: client, logger: logger).create(
                name: "schedules", bundleID: "com.herald.schedules")
            let schedules = ScheduleRepository(client: client, logger: logger)
            let rule = try Recurrence(rrule: "FREQ=DAILY")
            let start = try #require(Recurrence.LocalStart("2026-11-20T08:00"))
            let utc = try #require(TimeZone(identifier: "UTC"))
            let first = rule.occurrences(start: start, timeZone: utc, after: .distantPast, limit: 1).first
            let blueprint = Self.blueprint()
            var made: [ScheduleRecord] = []
            for name in ["broken", "fine"] {
                made.append(
                    try await schedules.create(
                        id: UUID(), appID: app.id, name: name, rrule: rule.rrule, timeZone: "UTC",
                        startsAtLocal: start.text, pushRequestJSON: "{}", blueprint: blueprint,
                        lateWindowSeconds: 3600, next: first))
            }
            try await client.query(
                "UPDATE schedules SET blueprint = '{\"not\": \"a blueprint\"}' WHERE id = \(made[0].id)")
            let now = try #require(Self.date("2026-11-20T08:00:10Z"))
            let fired = try await schedules.fireDue(now: now, pushesTopic: "t", limit: 10)
            #expect(fired.count == 2)
            #expect(fired.first { $0.scheduleID == made[1].id }?.created == true)
            #expect(
                fired.first { $0.scheduleID == made[0].id }?.skipReason?.hasPrefix("paused: its stored push") == true)
            #expect(try await schedules.schedule(id: made[1].id, appID: app.id)?.pushesCreated == 1)
            #expect(try await schedules.fireDue(now: now, pushesTopic: "t", limit: 10).isEmpty)
        }
    }

    @Test("a rule with COUNT ends: its last occurrence fired, the schedule has no next one")
    func countEnds() async throws {
        try await withEmptyDatabase { client, logger in
            try await MigrationRunner(client: client, logger: logger).migrate()
            let app = try await AppRepository(client: client, logger: logger).create(
                name: "schedules", bundleID: "com.herald.schedules")
            let schedules = ScheduleRepository(client: client, logger: logger)
            let rule = try Recurrence(rrule: "FREQ=DAILY;COUNT=2")
            let start = try #require(Recurrence.LocalStart("2026-11-20T08:00"))
            let utc = try #require(TimeZone(identifier: "UTC"))
            let first = rule.occurrences(start: start, timeZone: utc, after: .distantPast, limit: 1).first
            let blueprint = Self.blueprint(collapseID: "daily")
            let schedule = try await schedules.create(
                id: UUID(), appID: app.id, name: "twice", rrule: rule.rrule, timeZone: "UTC",
                startsAtLocal: start.text, pushRequestJSON: "{}", blueprint: blueprint, lateWindowSeconds: 3600,
                next: first)
            let day2 = try #require(Self.date("2026-11-21T08:00:30Z"))
            _ = try await schedules.fireDue(
                now: try #require(Self.date("2026-11-20T08:00:30Z")), pushesTopic: "t", limit: 10)
            let fired = try await schedules.fireDue(now: day2, pushesTopic: "t", limit: 10)
            #expect(fired.count == 1 && fired[0].created)
            let stored = try #require(try await schedules.schedule(id: schedule.id, appID: app.id))
            #expect(stored.nextOccurrenceAt == nil && stored.pushesCreated == 2)
            #expect(
                try await schedules.fireDue(now: day2.addingTimeInterval(86_400 * 3), pushesTopic: "t", limit: 10)
                    .isEmpty)
        }
    }
}
