import Foundation
import HeraldDomain
import Testing

/// The delivery policy's one rule for a device's clock (docs/delivery-policy.md): which zone a
/// device is in and what minute of its day it is, used alike by the wave planner and the fan-out's
/// quiet-hours filter.
@Suite("Delivery policy: a device's zone and local minute")
struct DeliveryPolicyTests {
    let berlin = TimeZone(identifier: "Europe/Berlin")!

    func at(_ text: String) throws -> Date { try #require(ISO8601DateFormatter().date(from: text)) }

    @Test("a device's own IANA zone wins; none, or a name that is no zone, falls back to the app's default")
    func zoneOfDevice() {
        #expect(DeliveryPolicy.zone(ofDevice: "Asia/Tokyo", fallback: berlin).identifier == "Asia/Tokyo")
        #expect(DeliveryPolicy.zone(ofDevice: "", fallback: berlin) == berlin)
        #expect(DeliveryPolicy.zone(ofDevice: "Mars/Olympus_Mons", fallback: berlin) == berlin)
        let utc = TimeZone(identifier: "UTC")!
        #expect(DeliveryPolicy.zone(nil) == utc)
        #expect(DeliveryPolicy(defaultTimeZone: "nowhere").defaultZone == utc)
    }

    @Test("the local minute follows the zone's offset on that date, daylight saving time included")
    func localMinute() throws {
        // 21:30 UTC is 23:30 in Berlin in summer (UTC+2), 22:30 in winter (UTC+1).
        #expect(DeliveryPolicy.localMinute(at: try at("2026-07-01T21:30:00Z"), in: berlin) == 23 * 60 + 30)
        #expect(DeliveryPolicy.localMinute(at: try at("2026-12-01T21:30:00Z"), in: berlin) == 22 * 60 + 30)
        // West of Greenwich the day wraps backwards: 02:15 UTC is 21:15 the day before in New York.
        let newYork = try #require(TimeZone(identifier: "America/New_York"))
        #expect(DeliveryPolicy.localMinute(at: try at("2026-12-01T02:15:00Z"), in: newYork) == 21 * 60 + 15)
        // A zone 45 minutes off the hour, and midnight itself.
        let chatham = try #require(TimeZone(identifier: "Pacific/Chatham"))
        #expect(DeliveryPolicy.localMinute(at: try at("2026-07-01T00:00:00Z"), in: chatham) == 12 * 60 + 45)
        #expect(DeliveryPolicy.localMinute(at: try at("2026-07-01T22:00:00Z"), in: berlin) == 0)
    }

    @Test("it agrees with the calendar's clock in every zone, every quarter hour of a day")
    func agreesWithCalendar() throws {
        let start = try at("2026-03-29T00:00:00Z")  // Europe's spring change falls on this day
        for name in ["UTC", "Europe/Berlin", "America/St_Johns", "Asia/Kolkata", "Pacific/Kiritimati"] {
            let zone = try #require(TimeZone(identifier: name))
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = zone
            for quarter in 0..<96 {
                let instant = start.addingTimeInterval(TimeInterval(quarter * 900))
                let parts = calendar.dateComponents([.hour, .minute], from: instant)
                #expect(
                    DeliveryPolicy.localMinute(at: instant, in: zone) == parts.hour! * 60 + parts.minute!,
                    "\(name) at \(instant)")
            }
        }
    }

    @Test("quiet hours contain their start and not their end, across midnight too")
    func quietWindow() {
        let night = DeliveryPolicy.QuietHours(startMinute: 22 * 60, endMinute: 8 * 60)
        #expect(night.contains(minute: 22 * 60))
        #expect(night.contains(minute: 3 * 60))
        #expect(!night.contains(minute: 8 * 60))
        #expect(!night.contains(minute: 12 * 60))
        let lunch = DeliveryPolicy.QuietHours(startMinute: 12 * 60, endMinute: 13 * 60)
        #expect(lunch.contains(minute: 12 * 60 + 59))
        #expect(!lunch.contains(minute: 13 * 60))
    }
}
