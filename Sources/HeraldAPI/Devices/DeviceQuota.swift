import Foundation
import HeraldStore
import Synchronization

/// Each app's active devices against the quota (`HERALD_API_MAX_ACTIVE_DEVICES_PER_APP`): the
/// public client key may register devices, and without a bound a script holding it could grow
/// the devices table without end and starve the app's real installations.
///
/// Counts come from the kept device counts (no `count(*)`), read at most once per `refresh` per
/// app, so the quota is soft by what an app registers within that time. A device already
/// registered may always register again.
final class DeviceQuota: Sendable {
    /// Active devices an app may have; 0: no quota.
    let limit: Int64
    /// How long an app's count is used before it is read again.
    let refresh: Duration
    /// Apps whose counts are kept at most (the oldest reading goes first).
    let maximumApps: Int
    private let counts: DeviceCountRepository
    private let known = Mutex<[UUID: (active: Int64, read: ContinuousClock.Instant)]>([:])

    init(limit: Int64, refresh: Duration = .seconds(10), maximumApps: Int = 10_000, counts: DeviceCountRepository) {
        self.limit = max(0, limit)
        self.refresh = refresh
        self.maximumApps = max(1, maximumApps)
        self.counts = counts
    }

    /// The app's active devices when they have reached the quota; nil below it (or without one).
    func reached(appID: UUID) async throws -> Int64? {
        guard limit > 0 else { return nil }
        let now = ContinuousClock.now
        var active = known.withLock { known in
            known[appID].flatMap { now - $0.read < refresh ? $0.active : nil }
        }
        if active == nil {
            let read = try await counts.devices(appID: appID).active
            known.withLock { known in
                if known.count >= maximumApps, known[appID] == nil,
                    let oldest = known.min(by: { $0.value.read < $1.value.read })?.key
                {
                    known[oldest] = nil
                }
                known[appID] = (read, now)
            }
            active = read
        }
        guard let active, active >= limit else { return nil }
        return active
    }

    /// The highest share of the quota an app whose count was read lately uses (0 without a quota).
    var highestShare: Double {
        guard limit > 0 else { return 0 }
        let highest = known.withLock { $0.values.map(\.active).max() ?? 0 }
        return Double(highest) / Double(limit)
    }
}
