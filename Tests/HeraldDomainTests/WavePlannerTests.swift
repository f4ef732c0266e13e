import Foundation
import HeraldDomain
import Testing

/// Local-time delivery and held quiet hours planned without I/O (docs/local-time.md): an
/// audience's time zones cut into waves, daylight saving time included.
@Suite("Wave plans (pure logic)")
struct WavePlannerTests {
    let formatter = ISO8601DateFormatter()

    func at(_ text: String) throws -> Date { try #require(formatter.date(from: text)) }

    func plan(
        _ groups: [(String, Int64)], time: String? = "09:00", date: String? = nil, hold: Bool = false,
        policy: DeliveryPolicy? = nil, start: String
    ) throws -> [(at: String, zones: [String], devices: Int64)] {
        let timing = PushTiming(
            localTime: try time.map { try #require(PushTiming.LocalTime($0)) },
            localDate: try date.map { try #require(PushTiming.LocalDate($0)) }, quietHours: hold ? .hold : nil)
        let waves = WavePlanner(timing: timing, policy: policy).plan(
            groups: groups.map { (timeZone: $0.0, devices: $0.1) }, start: try at(start))
        #expect(waves.map(\.index) == Array(0..<waves.count))
        return waves.map { (formatter.string(from: $0.dueAt), $0.timeZones, $0.devices) }
    }

    func expectWaves(
        _ actual: [(at: String, zones: [String], devices: Int64)], _ expected: [(String, [String], Int64)],
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(actual.map(\.at) == expected.map(\.0), sourceLocation: sourceLocation)
        #expect(actual.map(\.zones) == expected.map(\.1), sourceLocation: sourceLocation)
        #expect(actual.map(\.devices) == expected.map(\.2), sourceLocation: sourceLocation)
    }

    @Test("09:00 on a date: Tokyo first, then the app's default zone (Berlin) for devices without one, then New York")
    func onADate() throws {
        let berlinDefault = DeliveryPolicy(defaultTimeZone: "Europe/Berlin")
        expectWaves(
            try plan(
                [("Asia/Tokyo", 100), ("America/New_York", 50), ("", 25), ("Europe/Paris", 5)], date: "2026-12-01",
                policy: berlinDefault, start: "2026-11-30T00:00:00Z"),
            [
                ("2026-12-01T00:00:00Z", ["Asia/Tokyo"], 100),
                // Berlin and Paris reach 09:00 at the same instant: one wave.
                ("2026-12-01T08:00:00Z", ["", "Europe/Paris"], 30),
                ("2026-12-01T14:00:00Z", ["America/New_York"], 50),
            ])
    }

    @Test("without a date: the next 09:00 in each zone, within a day of the start")
    func nextOccurrence() throws {
        expectWaves(
            try plan(
                [("Asia/Tokyo", 1), ("Europe/Berlin", 2), ("America/New_York", 3), ("Asia/Kolkata", 4)],
                start: "2026-12-01T10:00:00Z"),
            [
                ("2026-12-01T14:00:00Z", ["America/New_York"], 3),
                ("2026-12-02T00:00:00Z", ["Asia/Tokyo"], 1),
                // Half-hour offsets are waves of their own.
                ("2026-12-02T03:30:00Z", ["Asia/Kolkata"], 4),
                ("2026-12-02T08:00:00Z", ["Europe/Berlin"], 2),
            ])
    }

    @Test("a date whose time has passed in some zones: those get it at once, in one wave")
    func late() throws {
        expectWaves(
            try plan(
                [("Asia/Tokyo", 1), ("Europe/Berlin", 2), ("America/New_York", 3)], date: "2026-12-01",
                start: "2026-12-01T10:00:00Z"),
            [
                ("2026-12-01T10:00:00Z", ["Asia/Tokyo", "Europe/Berlin"], 3),
                ("2026-12-01T14:00:00Z", ["America/New_York"], 3),
            ])
    }

    @Test("clocks going forward: 02:30 does not exist on 29 March in Berlin; its devices get the push at 03:30, once")
    func springForward() throws {
        expectWaves(
            try plan(
                [("Europe/Berlin", 7), ("Europe/London", 1)], time: "02:30", date: "2026-03-29",
                start: "2026-03-28T00:00:00Z"),
            [
                ("2026-03-29T01:30:00Z", ["Europe/Berlin", "Europe/London"], 8)
            ])
    }

    @Test(
        "clocks going back: 02:30 happens twice on 25 October in Berlin; its devices get the push once, the first time")
    func fallBack() throws {
        expectWaves(
            try plan([("Europe/Berlin", 7)], time: "02:30", date: "2026-10-25", start: "2026-10-24T00:00:00Z"),
            [("2026-10-25T00:30:00Z", ["Europe/Berlin"], 7)])
    }

    @Test("quiet hours held: zones in them wait for their end, the others go at once")
    func holdQuietHours() throws {
        let quiet = DeliveryPolicy(quietHours: .init(startMinute: 22 * 60, endMinute: 8 * 60))
        expectWaves(
            try plan(
                [("", 10), ("Asia/Tokyo", 20), ("America/New_York", 30)], time: nil, hold: true, policy: quiet,
                start: "2026-12-01T22:30:00Z"),
            [
                // New York: 17:30, awake.
                ("2026-12-01T22:30:00Z", ["America/New_York"], 30),
                // Tokyo: 07:30 on the 2nd, until 08:00.
                ("2026-12-01T23:00:00Z", ["Asia/Tokyo"], 20),
                // No time zone, no default: UTC, 22:30 until 08:00 the next day.
                ("2026-12-02T08:00:00Z", [""], 10),
            ])
        // A local time inside the quiet hours is held to their end; skipping is the fan-out's job.
        expectWaves(
            try plan(
                [("Europe/Berlin", 5)], time: "07:00", date: "2026-12-03", hold: true, policy: quiet,
                start: "2026-12-01T00:00:00Z"),
            [("2026-12-03T07:00:00Z", ["Europe/Berlin"], 5)])
        // Without holding, the same local time is planned as asked.
        expectWaves(
            try plan(
                [("Europe/Berlin", 5)], time: "07:00", date: "2026-12-03", policy: quiet, start: "2026-12-01T00:00:00Z"),
            [("2026-12-03T06:00:00Z", ["Europe/Berlin"], 5)])
    }

    @Test("a stored time zone that is not an IANA name is treated as the default, under its own name")
    func unknownZone() throws {
        expectWaves(
            try plan([("Mars/Olympus", 3), ("", 1)], date: "2026-12-01", start: "2026-11-30T00:00:00Z"),
            [("2026-12-01T09:00:00Z", ["", "Mars/Olympus"], 4)])
    }

    @Test("the batch's wave is the last started wave not after it")
    func waveOfABatch() {
        let start = Date(timeIntervalSince1970: 0)
        let waves = [
            PushWave(index: 0, dueAt: start, timeZones: ["A"], devices: 1, firstSequence: 0),
            PushWave(index: 1, dueAt: start, timeZones: ["B"], devices: 1, firstSequence: 4),
            PushWave(index: 2, dueAt: start, timeZones: ["C"], devices: 1),
        ]
        #expect(waves.wave(ofBatch: 0)?.index == 0)
        #expect(waves.wave(ofBatch: 3)?.index == 0)
        #expect(waves.wave(ofBatch: 4)?.index == 1)
        #expect(waves.wave(ofBatch: 99)?.index == 1)
    }

    @Test("local times and dates are read strictly")
    func parsing() {
        #expect(PushTiming.LocalTime("09:05")?.description == "09:05")
        for bad in ["9:00", "24:00", "12:60", "12-00", "", "0900", "12:00:00"] {
            #expect(PushTiming.LocalTime(bad) == nil)
        }
        #expect(PushTiming.LocalDate("2028-02-29")?.description == "2028-02-29")
        for bad in ["2026-02-29", "2026-13-01", "26-12-01", "2026-12-1", "2026/12/01"] {
            #expect(PushTiming.LocalDate(bad) == nil)
        }
        let timing = PushTiming(localTime: PushTiming.LocalTime("09:00"), localDate: PushTiming.LocalDate("2026-12-01"))
        #expect(timing.earliestInstant() == ISO8601DateFormatter().date(from: "2026-11-30T19:00:00Z"))
        #expect(timing.latestInstant() == ISO8601DateFormatter().date(from: "2026-12-01T21:00:00Z"))
        #expect(PushTiming(json: timing.json) == timing)
    }
}
