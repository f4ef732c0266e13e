import Foundation
import HeraldDomain
import Testing

/// Schedules' recurrence rules (docs/schedules.md) without I/O: an RRULE subset read in a named
/// time zone from a local start, daylight saving time included.
@Suite("Recurrence rules (pure logic)")
struct RecurrenceTests {
    let berlin = TimeZone(identifier: "Europe/Berlin")!
    let utc = TimeZone(identifier: "UTC")!
    let formatter = ISO8601DateFormatter()

    func times(_ rule: String, _ start: String, _ zone: TimeZone, after: String? = nil, limit: Int = 10) throws
        -> [String]
    {
        let recurrence = try Recurrence(rrule: rule)
        let start = try #require(Recurrence.LocalStart(start))
        let after = after.flatMap(formatter.date(from:)) ?? Date(timeIntervalSince1970: 0)
        return recurrence.occurrences(start: start, timeZone: zone, after: after, limit: limit).map {
            formatter.string(from: $0)
        }
    }

    @Test("weekdays at 08:00 in Berlin: Monday, Wednesday, Friday, every week")
    func weekly() throws {
        #expect(
            try times("FREQ=WEEKLY;BYDAY=MO,WE,FR", "2026-11-30T08:00", berlin, limit: 4) == [
                "2026-11-30T07:00:00Z", "2026-12-02T07:00:00Z", "2026-12-04T07:00:00Z", "2026-12-07T07:00:00Z",
            ])
        // Every other week, from a Wednesday start: that week's Friday, then two weeks on.
        #expect(
            try times("RRULE:FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,FR", "2026-12-02T09:30", utc, limit: 3) == [
                "2026-12-04T09:30:00Z", "2026-12-14T09:30:00Z", "2026-12-18T09:30:00Z",
            ])
    }

    @Test("clocks going forward: 02:30 does not exist on 29 March in Berlin and is sent at 03:30, once")
    func springForward() throws {
        #expect(
            try times("FREQ=DAILY", "2026-03-28T02:30", berlin, limit: 3) == [
                "2026-03-28T01:30:00Z", "2026-03-29T01:30:00Z", "2026-03-30T00:30:00Z",
            ])
        // 02:00 and 02:30 move onto 03:00 and 03:30, which the rule also names: each instant once.
        #expect(
            try times("FREQ=DAILY;BYHOUR=2,3;BYMINUTE=0,30;COUNT=6", "2026-03-29T00:00", berlin) == [
                "2026-03-29T01:00:00Z", "2026-03-29T01:30:00Z", "2026-03-30T00:00:00Z", "2026-03-30T00:30:00Z",
                "2026-03-30T01:00:00Z", "2026-03-30T01:30:00Z",
            ])
    }

    @Test("clocks going back: 02:30 happens twice on 25 October in Berlin and is sent once, the first time")
    func fallBack() throws {
        #expect(
            try times("FREQ=DAILY", "2026-10-24T02:30", berlin, limit: 3) == [
                "2026-10-24T00:30:00Z", "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z",
            ])
    }

    @Test("monthly on the 31st skips the months without one; COUNT and UNTIL end a rule")
    func monthlyCountUntil() throws {
        #expect(
            try times("FREQ=MONTHLY;BYMONTHDAY=31", "2026-01-31T09:00", utc, limit: 3) == [
                "2026-01-31T09:00:00Z", "2026-03-31T09:00:00Z", "2026-05-31T09:00:00Z",
            ])
        #expect(try times("FREQ=DAILY;COUNT=3", "2026-12-01T08:00", utc).count == 3)
        // A rule started long ago is looked at from `after`, not ten years from its start.
        #expect(
            try times("FREQ=DAILY", "2012-01-01T08:00", utc, after: "2026-11-25T09:00:00Z", limit: 1) == [
                "2026-11-26T08:00:00Z"
            ])
        // COUNT counts from the start, not from `after`.
        #expect(
            try times("FREQ=DAILY;COUNT=3", "2026-12-01T08:00", utc, after: "2026-12-02T00:00:00Z") == [
                "2026-12-02T08:00:00Z", "2026-12-03T08:00:00Z",
            ])
        #expect(
            try times("FREQ=DAILY;UNTIL=20261203T080000Z", "2026-12-01T08:00", utc) == [
                "2026-12-01T08:00:00Z", "2026-12-02T08:00:00Z", "2026-12-03T08:00:00Z",
            ])
        let ended = ScheduleTiming(
            rule: try Recurrence(rrule: "FREQ=DAILY;COUNT=2"), start: try #require(.init("2026-12-01T08:00")), zone: utc
        )
        #expect(ended.next(after: formatter.date(from: "2026-12-02T08:00:00Z")!) == nil)
    }

    @Test("a rule is stored in one spelling; what cannot be read says what to fix")
    func parsing() throws {
        #expect(
            try Recurrence(rrule: "rrule:byday=fr,mo;freq=weekly;byhour=8,8").rrule
                == "FREQ=WEEKLY;BYDAY=MO,FR;BYHOUR=8")
        for (rule, message) in [
            ("BYDAY=MO", "needs FREQ"), ("FREQ=YEARLY", "not supported"), ("FREQ=WEEKLY;BYDAY=1MO", "ordinals"),
            ("FREQ=DAILY;COUNT=0", "COUNT is 1"), ("FREQ=DAILY;COUNT=2;UNTIL=20261231T000000Z", "not both"),
            ("FREQ=DAILY;UNTIL=2026-12-31", "UTC time"), ("FREQ=DAILY;BYHOUR=24", "BYHOUR takes"),
            ("FREQ=DAILY;BYSETPOS=1", "BYSETPOS is not supported"), ("FREQ=WEEKLY;BYMONTHDAY=3", "goes with"),
            ("FREQ=DAILY;FREQ=WEEKLY", "twice"), ("FREQ=DAILY;INTERVAL=0", "INTERVAL"),
        ] {
            let error = #expect(throws: Recurrence.Invalid.self) { try Recurrence(rrule: rule) }
            #expect(error?.description.contains(message) == true, "\(rule): \(error?.description ?? "")")
        }
        #expect(Recurrence.LocalStart("2026-12-01T08:00")?.text == "2026-12-01T08:00")
        #expect(Recurrence.LocalStart("2026-13-01T08:00") == nil)
        #expect(Recurrence.LocalStart("tomorrow") == nil)
    }
}
