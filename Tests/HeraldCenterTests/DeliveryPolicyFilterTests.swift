import Foundation
import HeraldDomain
import HeraldRecords
import HeraldStore
import Testing

@testable import HeraldCenter

/// The delivery policy's rules at fan-out (docs/delivery-policy.md), without I/O: quiet hours in
/// each device's own time zone (the app's default for devices without one), and the frequency
/// cap counted over the app's earlier campaigns' targets.
@Suite("Delivery policy filter (pure logic)")
struct DeliveryPolicyFilterTests {
    /// Devices 1… with the given time zones ("" for none) as their only value.
    func page(zones: [String]) -> AudiencePage {
        var page = AudiencePage(devices: DeviceTokens(reservingCapacity: zones.count, valuesPerDevice: 1))
        let group = page.group(AudienceGroup(environment: .sandbox, topic: "com.example"))
        for (index, zone) in zones.enumerated() {
            page.append(deviceID: Int64(index + 1), token: [UInt8](repeating: UInt8(index), count: 32), group: group)
            page.devices.appendValue(zone.isEmpty ? nil : Array(zone.utf8))
        }
        return page
    }

    /// 2026-11-18 21:30 UTC: 22:30 in Berlin, 06:30 (next day) in Tokyo, 16:30 in New York.
    let now = Date(timeIntervalSince1970: 1_795_037_400)

    @Test(
        "quiet hours across midnight, in each device's zone; devices without one (or with a bad one) use the app's default"
    )
    func quietHoursInEachDevicesZone() {
        let policy = DeliveryPolicy(
            quietHours: .init(startMinute: 22 * 60, endMinute: 8 * 60), defaultTimeZone: "Europe/Berlin")
        let filter = DeliveryPolicyFilter(policy: policy, timeZoneField: 0)
        let result = filter.apply(
            to: page(zones: ["Europe/Berlin", "Asia/Tokyo", "America/New_York", "", "Not/AZone", "UTC"]), now: now,
            earlier: [])
        #expect(result.page.devices.deviceIDs == [3, 6], "New York (16:30) and UTC (21:30) are awake")
        #expect(result.skipped == [.quietHours: 4])
        #expect(result.targets.map { (1...6).filter($0.contains) } == [3, 6])
        // The window's end is not in it: 08:00 sharp in Tokyo is awake.
        let eight = Date(timeIntervalSince1970: 1_795_042_800)  // 23:00 UTC = 08:00 Tokyo
        #expect(filter.apply(to: page(zones: ["Asia/Tokyo"]), now: eight, earlier: []).page.count == 1)
    }

    @Test("daylight saving time: the same UTC moment is quiet in summer and not in winter for a device in Berlin")
    func daylightSavingTime() {
        let policy = DeliveryPolicy(quietHours: .init(startMinute: 22 * 60, endMinute: 23 * 60))
        let filter = DeliveryPolicyFilter(policy: policy, timeZoneField: 0)
        // 20:30 UTC: 22:30 in Berlin in July (UTC+2), 21:30 in January (UTC+1).
        let july = Date(timeIntervalSince1970: 1_784_925_000)  // 2026-07-24 20:30 UTC
        let january = Date(timeIntervalSince1970: 1_800_390_600)  // 2027-01-19 20:30 UTC
        #expect(filter.apply(to: page(zones: ["Europe/Berlin"]), now: july, earlier: []).page.count == 0)
        #expect(filter.apply(to: page(zones: ["Europe/Berlin"]), now: january, earlier: []).page.count == 1)
    }

    @Test("the cap counts each device's earlier campaigns; a device at the cap is skipped, the rest sent and noted")
    func frequencyCap() {
        let policy = DeliveryPolicy(frequencyCap: .init(maxPushes: 2, windowSeconds: 86_400))
        let filter = DeliveryPolicyFilter(policy: policy, timeZoneField: nil)
        var first = TargetBitmap(firstDevice: 1, lastDevice: 4)
        for device in [1, 2, 3] as [Int64] { first.insert(device) }
        var second = TargetBitmap(firstDevice: 2, lastDevice: 9)
        for device in [2, 3, 5] as [Int64] { second.insert(device) }
        // A page that starts before and ends after them.
        var third = TargetBitmap(firstDevice: 3, lastDevice: 3)
        third.insert(3)
        let result = filter.apply(
            to: page(zones: Array(repeating: "", count: 6)), now: now, earlier: [first, second, third])
        #expect(result.page.devices.deviceIDs == [1, 4, 5, 6], "2 and 3 got two campaigns already")
        #expect(result.skipped == [.capped: 2])
        #expect(result.targets.map { (1...6).filter($0.contains) } == [1, 4, 5, 6])
        #expect(filter.capWindowStart(now: now) == now.addingTimeInterval(-86_400))
    }

    @Test(
        "skip_unauthorized: devices whose app reported notifications denied are skipped; every other status, and none, is sent"
    )
    func unauthorizedDevicesAreSkipped() {
        let filter = DeliveryPolicyFilter(policy: DeliveryPolicy(), timeZoneField: nil, authorizationField: 0)
        let result = filter.apply(
            to: page(zones: ["authorized", "denied", "provisional", "", "ephemeral", "not_determined", "denied"]),
            now: now, earlier: [])
        #expect(result.page.devices.deviceIDs == [1, 3, 4, 5, 6])
        #expect(result.skipped == [.notAuthorized: 2])
        #expect(result.targets.map { (1...7).filter($0.contains) } == [1, 3, 4, 5, 6])
        // With quiet hours too: a denied device counts once, as not authorized.
        let both = DeliveryPolicyFilter(
            policy: DeliveryPolicy(quietHours: .init(startMinute: 0, endMinute: 1439)), timeZoneField: 0,
            authorizationField: 0)
        #expect(
            both.apply(to: page(zones: ["denied", "UTC"]), now: now, earlier: []).skipped == [
                .notAuthorized: 1, .quietHours: 1,
            ])
    }

    @Test("a bitmap's bits: first device in the most significant bit; outside the range nothing")
    func bitmaps() {
        var bitmap = TargetBitmap(firstDevice: 100, lastDevice: 117)
        #expect(bitmap.bits.count == 3)
        for device in [100, 107, 108, 117] as [Int64] { bitmap.insert(device) }
        #expect(bitmap.bits == [0x81, 0x80, 0x40])
        #expect((99...118).filter(bitmap.contains) == [100, 107, 108, 117])
    }
}
