import Foundation
import HeraldDomain
import HeraldStore

/// An app's delivery policy applied to a campaign's fan-out pages (docs/delivery-policy.md):
/// devices in their quiet hours, and devices that already got the cap's number of campaigns in its
/// window, are left out of the batches and counted as skipped; so are, for a push with
/// `options.skip_unauthorized` (docs/engagement.md), the devices whose app reported notifications
/// turned off. Pure: the earlier campaigns' targets and the time come in, so every rule is
/// unit-tested.
struct DeliveryPolicyFilter: Sendable {
    let policy: DeliveryPolicy
    /// Which of a device's values is its time zone (``AudienceSelection/personalization``); nil
    /// when the policy has no quiet hours.
    let timeZoneField: Int?
    /// Devices without a time zone, or with one that is not an IANA name, use this one.
    let defaultTimeZone: TimeZone
    /// Which of a device's values is its `authorization_status`, for a push that skips the
    /// devices whose notifications are off; nil otherwise.
    let authorizationField: Int?

    init(policy: DeliveryPolicy, timeZoneField: Int?, authorizationField: Int? = nil) {
        self.policy = policy
        self.timeZoneField = timeZoneField
        self.authorizationField = authorizationField
        defaultTimeZone = policy.defaultZone
    }

    /// `denied`, as the device's value reads.
    private static let denied = Array(AuthorizationStatus.denied.rawValue.utf8)

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
    /// campaigns' targets in the cap's window overlapping the page. A page nobody is left out of
    /// is returned as it is (no copy).
    func apply(to page: AudiencePage, now: Date, earlier: [TargetBitmap]) -> Result {
        guard let first = page.devices.deviceIDs.first, let last = page.devices.deviceIDs.last else {
            return Result(page: page, skipped: [:], targets: nil)
        }
        var zones = ZoneCache(filter: self, now: now)
        let cap = policy.frequencyCap?.maxPushes ?? Int.max
        var capped: Int64 = 0
        var quiet: Int64 = 0
        var unauthorized: Int64 = 0
        var targets = TargetBitmap(firstDevice: first, lastDevice: last)
        var keep = [Bool](repeating: true, count: page.count)
        for index in 0..<page.count {
            let device = page.devices.deviceIDs[index]
            if let field = authorizationField, page.devices.value(field, at: index).elementsEqual(Self.denied) {
                unauthorized += 1
                keep[index] = false
                continue
            }
            if let field = timeZoneField, zones.isQuiet(page.devices.value(field, at: index)) {
                quiet += 1
                keep[index] = false
                continue
            }
            if cap != Int.max, !earlier.isEmpty {
                var count = 0
                for bitmap in earlier where bitmap.contains(device) {
                    count += 1
                    if count >= cap { break }
                }
                if count >= cap {
                    capped += 1
                    keep[index] = false
                    continue
                }
            }
            targets.insert(device)
        }
        var skipped: [SkipReason: Int64] = [:]
        if capped > 0 { skipped[.capped] = capped }
        if quiet > 0 { skipped[.quietHours] = quiet }
        if unauthorized > 0 { skipped[.notAuthorized] = unauthorized }
        let kept = skipped.isEmpty ? page : page.keeping { keep[$0] }
        return Result(page: kept, skipped: skipped, targets: targets)
    }

    /// Whether it is quiet hours now in a time zone given by its name's bytes, each distinct name
    /// worked out once: looked up by a hash of its bytes, so a device costs no String.
    struct ZoneCache {
        let filter: DeliveryPolicyFilter
        let now: Date
        var known: [UInt64: (name: [UInt8], quiet: Bool)] = [:]

        init(filter: DeliveryPolicyFilter, now: Date) {
            self.filter = filter
            self.now = now
        }

        mutating func isQuiet(_ name: ArraySlice<UInt8>) -> Bool {
            // FNV-1a.
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in name { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
            if let entry = known[hash], entry.name.elementsEqual(name) { return entry.quiet }
            let quiet = filter.isQuiet(zoneNamed: String(decoding: name, as: UTF8.self), at: now)
            if known[hash] == nil { known[hash] = (Array(name), quiet) }
            return quiet
        }
    }

    /// Whether `now` falls in the quiet hours in the zone `name` ("" or a name that is not an
    /// IANA zone: the default zone).
    func isQuiet(zoneNamed name: String, at now: Date) -> Bool {
        guard let quiet = policy.quietHours else { return false }
        let zone = DeliveryPolicy.zone(ofDevice: name, fallback: defaultTimeZone)
        return quiet.contains(minute: DeliveryPolicy.localMinute(at: now, in: zone))
    }
}
