import Foundation
import HeraldStore

/// An app's delivery policy applied to a campaign's fan-out pages (docs/delivery-policy.md):
/// devices in their quiet hours, and devices that already got the cap's number of campaigns in its
/// window, are left out of the batches and counted as skipped. Pure: the earlier campaigns'
/// targets and the time come in, so every rule is unit-tested.
struct DeliveryPolicyFilter: Sendable {
    let policy: DeliveryPolicy
    /// Which of a device's values is its time zone (``AudienceSelection/personalization``); nil
    /// when the policy has no quiet hours.
    let timeZoneField: Int?
    /// Devices without a time zone, or with one that is not an IANA name, use this one.
    let defaultTimeZone: TimeZone

    init(policy: DeliveryPolicy, timeZoneField: Int?) {
        self.policy = policy
        self.timeZoneField = timeZoneField
        defaultTimeZone = policy.defaultTimeZone.flatMap(TimeZone.init(identifier:)) ?? TimeZone(identifier: "UTC")!
    }

    struct Result {
        /// The devices to send to.
        var page: AudiencePage
        var skipped: [SkipReason: Int64]
        /// The devices of the page's range in `page` (stored for the cap and for rebuilds).
        var targets: TargetBitmap?
    }

    /// Since when earlier campaigns count toward the cap, at `now`; nil without a cap.
    func capWindowStart(now: Date) -> Date? {
        policy.frequencyCap.map { now.addingTimeInterval(-TimeInterval($0.windowSeconds)) }
    }

    /// `page` without the devices the policy leaves out at `now`; `earlier` are the app's other
    /// campaigns' targets in the cap's window overlapping the page.
    func apply(to page: AudiencePage, now: Date, earlier: [TargetBitmap]) -> Result {
        guard let first = page.devices.deviceIDs.first, let last = page.devices.deviceIDs.last else {
            return Result(page: page, skipped: [:], targets: nil)
        }
        var quietMinutes: [String: Bool] = [:]
        let seconds = now.timeIntervalSince1970
        func inQuietHours(_ index: Int) -> Bool {
            guard let quiet = policy.quietHours, let field = timeZoneField else { return false }
            let name = String(decoding: page.devices.value(field, at: index), as: UTF8.self)
            if let known = quietMinutes[name] { return known }
            let zone = name.isEmpty ? defaultTimeZone : TimeZone(identifier: name) ?? defaultTimeZone
            let local = seconds + Double(zone.secondsFromGMT(for: now))
            let minute = Int((local / 60).rounded(.down)) % 1440
            let quietNow = quiet.contains(minute: minute < 0 ? minute + 1440 : minute)
            quietMinutes[name] = quietNow
            return quietNow
        }
        let cap = policy.frequencyCap?.maxPushes ?? Int.max
        var capped: Int64 = 0
        var quiet: Int64 = 0
        var targets = TargetBitmap(firstDevice: first, lastDevice: last)
        let kept = page.keeping { index in
            let device = page.devices.deviceIDs[index]
            if inQuietHours(index) {
                quiet += 1
                return false
            }
            if cap != Int.max {
                var count = 0
                for bitmap in earlier where bitmap.contains(device) {
                    count += 1
                    if count >= cap { break }
                }
                if count >= cap {
                    capped += 1
                    return false
                }
            }
            targets.insert(device)
            return true
        }
        var skipped: [SkipReason: Int64] = [:]
        if capped > 0 { skipped[.capped] = capped }
        if quiet > 0 { skipped[.quietHours] = quiet }
        return Result(page: kept, skipped: skipped, targets: targets)
    }
}
