import Foundation
import HeraldStore
import Testing

@testable import HeraldAPI

/// Recurring schedules through herald-api (docs/schedules.md): saved with their next occurrences,
/// refused field by field, paused, resumed, changed, deleted; each occurrence's push listed by
/// schedule.
@Suite("schedules API")
struct SchedulesAPITests {
    static let weekdays =
        #"{"name":"morning briefing","recurrence":{"rrule":"FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR;BYHOUR=8;BYMINUTE=0","time_zone":"Europe/Berlin","starts_at":"2030-01-01T08:00"},"push":{"audience":{"tags":{"any":["news"]}},"notification":{"alert":{"title":"Good morning","body":"Your briefing"}},"options":{"time_to_live_seconds":3600}}}"#

    @Test(
        "a schedule runs on its key's authority: revoking the key pauses it, a live key resumes it, a rotated key's schedules follow the new key"
    )
    func revokedKeyPausesItsSchedules() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            func newKey() async throws -> (key: String, id: String) {
                let made = try await api.call(
                    .post, "/v1/apps/\(app.id)/keys", key: APITest.adminToken, json: #"{"kind":"server"}"#)
                return (try #require(made["key"] as? String), try #require(made["id"] as? String))
            }
            func state(_ id: String) async throws -> String? {
                try await api.call(.get, "/v1/schedules/\(id)", key: app.serverKey)["state"] as? String
            }
            let marketing = try await newKey()
            let created = try await api.call(.post, "/v1/schedules", key: marketing.key, json: Self.weekdays)
            let id = try #require(created["id"] as? String)
            #expect(
                try await api.call(.delete, "/v1/apps/\(app.id)/keys/\(marketing.id)", key: APITest.adminToken).status
                    == .noContent)
            #expect(try await state(id) == "paused")
            #expect(
                try await api.call(.post, "/v1/schedules/\(id)/resume", key: app.serverKey)["state"] as? String
                    == "active")

            // Rotated: the schedule follows the new key, and stops with it.
            let rotating = try await newKey()
            let second = try await api.call(
                .post, "/v1/schedules", key: rotating.key,
                json: Self.weekdays.replacingOccurrences(
                    of: "morning briefing", with: "evening briefing"))
            let secondID = try #require(second["id"] as? String)
            let rotated = try await api.call(
                .post, "/v1/apps/\(app.id)/keys/\(rotating.id)/rotate", key: APITest.adminToken)
            let newID = try #require(rotated["id"] as? String)
            #expect(try await state(secondID) == "active", "the old key's end does not stop it")
            #expect(
                try await api.call(.delete, "/v1/apps/\(app.id)/keys/\(newID)", key: APITest.adminToken).status
                    == .noContent)
            #expect(try await state(secondID) == "paused")
            #expect(try await state(id) == "active", "the other key's schedule goes on")
        }
    }

    @Test("a schedule: its next occurrences in UTC, paused, resumed, changed, listed, deleted")
    func lifecycle() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            let created = try await api.call(.post, "/v1/schedules", key: app.serverKey, json: Self.weekdays)
            #expect(created.status == .created)
            let id = try #require(created["id"] as? String)
            #expect(created["state"] as? String == "active")
            // 2030-01-01 is a Tuesday; 08:00 in Berlin in winter is 07:00 UTC.
            #expect(
                created["next_occurrences"] as? [String] == [
                    "2030-01-01T07:00:00Z", "2030-01-02T07:00:00Z", "2030-01-03T07:00:00Z", "2030-01-04T07:00:00Z",
                    "2030-01-07T07:00:00Z",
                ])
            #expect(
                (created["recurrence"] as? [String: String])?["rrule"]
                    == "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR;BYHOUR=8;BYMINUTE=0")
            #expect(created["late_window_minutes"] as? Int == 60 && created["pushes_created"] as? Int == 0)
            let scheduleID = try #require(UUID(uuidString: id))
            let appID = try #require(UUID(uuidString: app.id))
            let stored = try #require(
                try await ScheduleRepository(client: api.database, logger: api.logger).schedule(
                    id: scheduleID, appID: appID))
            #expect(stored.blueprint.priorityClass == "campaign" && stored.blueprint.timeToLiveSeconds == 3600)
            #expect(String(decoding: stored.blueprint.payload, as: UTF8.self).contains("Your briefing"))

            let paused = try await api.call(.post, "/v1/schedules/\(id)/pause", key: app.serverKey)
            #expect(paused.status == .ok && paused["state"] as? String == "paused")
            let resumed = try await api.call(.post, "/v1/schedules/\(id)/resume", key: app.serverKey)
            #expect(resumed.status == .ok && resumed["state"] as? String == "active")

            let changed = try await api.call(
                .patch, "/v1/schedules/\(id)", key: app.serverKey,
                json:
                    #"{"recurrence":{"rrule":"FREQ=MONTHLY;BYMONTHDAY=1;COUNT=2","time_zone":"America/New_York","starts_at":"2030-02-01T09:30"},"late_window_minutes":5}"#
            )
            #expect(changed.status == .ok)
            #expect(changed["next_occurrences"] as? [String] == ["2030-02-01T14:30:00Z", "2030-03-01T14:30:00Z"])
            #expect(changed["late_window_minutes"] as? Int == 5)

            let list = try await api.call(.get, "/v1/schedules", key: app.serverKey)
            #expect((list["schedules"] as? [[String: Any]])?.count == 1)
            let pushes = try await api.call(.get, "/v1/pushes?schedule_id=\(id)", key: app.serverKey)
            #expect(pushes.status == .ok && (pushes["pushes"] as? [Any])?.isEmpty == true)

            let duplicate = try await api.call(.post, "/v1/schedules", key: app.serverKey, json: Self.weekdays)
            #expect(duplicate.status == .conflict)
            #expect((duplicate["error"] as? [String: Any])?["code"] as? String == "schedule_name_taken")

            let other = try await api.createApp(name: "other")
            #expect(try await api.call(.get, "/v1/schedules/\(id)", key: other.serverKey).status == .notFound)
            #expect(try await api.call(.delete, "/v1/schedules/\(id)", key: app.serverKey).status == .noContent)
            #expect(try await api.call(.get, "/v1/schedules/\(id)", key: app.serverKey).status == .notFound)
        }
    }

    @Test("what cannot be scheduled is refused, naming the field")
    func refusals() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            let push = #"{"audience":{"all":true},"notification":{"alert":{"body":"x"}}}"#
            func schedule(_ recurrence: String, push: String = push) -> String {
                #"{"name":"s","recurrence":\#(recurrence),"push":\#(push)}"#
            }
            let good = #"{"rrule":"FREQ=DAILY","time_zone":"UTC","starts_at":"2030-01-01T08:00"}"#
            for (body, field) in [
                (
                    schedule(#"{"rrule":"FREQ=HOURLY","time_zone":"UTC","starts_at":"2030-01-01T08:00"}"#),
                    "recurrence.rrule"
                ),
                (
                    schedule(#"{"rrule":"FREQ=DAILY","time_zone":"Moon/Base","starts_at":"2030-01-01T08:00"}"#),
                    "recurrence.time_zone"
                ),
                (schedule(#"{"rrule":"FREQ=DAILY","time_zone":"UTC","starts_at":"soon"}"#), "recurrence.starts_at"),
                (
                    schedule(
                        #"{"rrule":"FREQ=DAILY;UNTIL=20200101T000000Z","time_zone":"UTC","starts_at":"2019-01-01T08:00"}"#
                    ),
                    "recurrence.rrule"
                ),
                (
                    schedule(
                        good,
                        push:
                            #"{"audience":{"all":true},"notification":{"alert":{"body":"x"}},"options":{"scheduled_at":"2030-01-01T00:00:00Z"}}"#
                    ),
                    "push.options.scheduled_at"
                ),
                (
                    schedule(good, push: #"{"audience":{"tags":{}},"notification":{"alert":{"body":"x"}}}"#),
                    "push.audience"
                ),
                (
                    schedule(
                        good,
                        push:
                            #"{"audience":{"all":true},"notification":{"alert":{"body":"x"}},"options":{"priority_class":"transactional"}}"#
                    ),
                    "push.options.priority_class"
                ),
            ] {
                let answer = try await api.call(.post, "/v1/schedules", key: app.serverKey, json: body)
                #expect(answer.status == .unprocessableContent, "\(body)")
                let reported = (answer["error"] as? [String: Any])?["field"] as? String
                #expect(reported?.hasPrefix(field) == true, "\(body): \(reported ?? "-")")
            }
            let badFilter = try await api.call(.get, "/v1/pushes?schedule_id=nope", key: app.serverKey)
            #expect(badFilter.status == .badRequest || badFilter.status == .unprocessableContent)
        }
    }

    @Test(
        "a schedule at 09:00 in each device's local time: it fires on each of the rule's days when UTC+14 reaches 09:00, and each occurrence's push carries that day's date"
    )
    func localTimeSchedule() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            let body =
                #"{"name":"local morning","recurrence":{"rrule":"FREQ=WEEKLY;BYDAY=MO,FR","time_zone":"UTC","starts_at":"2030-01-01T00:00"},"push":{"audience":{"all":true},"notification":{"alert":{"body":"Good morning"}},"options":{"local_time":{"time":"09:00"},"time_to_live_seconds":7200}}}"#
            let created = try await api.call(.post, "/v1/schedules", key: app.serverKey, json: body)
            #expect(created.status == .created, "\(created.text)")
            // Friday 4 and Monday 7 January 2030, 09:00 at UTC+14: 19:00 UTC the day before.
            #expect(
                (created["next_occurrences"] as? [String])?.prefix(2) == [
                    "2030-01-03T19:00:00Z", "2030-01-06T19:00:00Z",
                ])
            let text = try #require(created["id"] as? String)
            let id = try #require(UUID(uuidString: text))
            let appID = try #require(UUID(uuidString: app.id))
            let schedules = ScheduleRepository(client: api.database, logger: api.logger)
            let stored = try #require(try await schedules.schedule(id: id, appID: appID))
            let occurrence = try #require(ISO8601DateFormatter().date(from: "2030-01-03T19:00:00Z"))
            let push = stored.blueprint.push(id: UUID(), appID: stored.appID, scheduleID: id, occurrence: occurrence)
            #expect(
                push.timing?.localTime?.description == "09:00" && push.timing?.localDate?.description == "2030-01-04")
            #expect(push.timing?.timeToLiveSeconds == 7200 && push.expiresAt == nil, "each wave's own time to live")
            #expect(push.priorityClass == .campaign)

            for (json, field) in [
                (
                    body.replacingOccurrences(
                        of: #""rrule":"FREQ=WEEKLY;BYDAY=MO,FR""#, with: #""rrule":"FREQ=DAILY;BYHOUR=8""#),
                    "recurrence.rrule"
                ),
                (
                    body.replacingOccurrences(of: #""time":"09:00"}"#, with: #""time":"09:00","date":"2030-01-04"}"#),
                    "push.options.local_time.date"
                ),
            ] {
                let refused = try await api.call(.post, "/v1/schedules", key: app.serverKey, json: json)
                #expect(refused.status == .unprocessableContent, "\(refused.text)")
                #expect((refused["error"] as? [String: Any])?["field"] as? String == field)
            }
        }
    }
}
