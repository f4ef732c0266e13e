import Foundation
import HeraldStore
import NIOCore
import Synchronization

/// Which live connection of this gateway holds each device — at most one (a newer connection of
/// the same device replaces the older, which is closed `replaced`) — and the presence changes not
/// yet written to PostgreSQL (``PresenceWriter`` takes them in batches). Both change under one
/// lock, so the order of a device's connects and leaves is the order presence is written in.
final class DeviceDirectory: Sendable {
    /// A connection, reachable from any thread through its event loop.
    struct Entry: Sendable {
        let connectionID: UInt64
        let appID: UUID
        let connection: NIOLoopBound<GatewayConnectionHandler>
    }

    private struct State {
        var entries: [Int64: Entry] = [:]
        /// The latest change of each device not yet written: its app and when it connected, or
        /// nil when it left.
        var changes: [Int64: (appID: UUID, at: Date)?] = [:]
    }

    private let state = Mutex(State())

    /// Devices with a live connection here.
    var count: Int { state.withLock { $0.entries.count } }

    /// Presence changes waiting to be written.
    var pendingChanges: Int { state.withLock { $0.changes.count } }

    /// The live connection of `deviceID` here, if any.
    func entry(_ deviceID: Int64) -> Entry? {
        state.withLock { $0.entries[deviceID] }
    }

    /// Makes `entry` the connection of `deviceID`.
    /// - Returns: the connection it replaces, to close.
    func claim(_ deviceID: Int64, _ entry: Entry) -> Entry? {
        state.withLock { state in
            let previous = state.entries[deviceID]
            state.entries[deviceID] = entry
            state.changes[deviceID] = .some((entry.appID, Date()))
            return previous
        }
    }

    /// Forgets `deviceID`'s connection if it is still `connectionID`'s (a replaced connection's
    /// close changes nothing).
    func release(_ deviceID: Int64, connectionID: UInt64) {
        state.withLock { state in
            guard state.entries[deviceID]?.connectionID == connectionID else { return }
            state.entries[deviceID] = nil
            state.changes[deviceID] = .some(nil)
        }
    }

    /// The changes not yet written, which are no longer kept here.
    func takeChanges() -> [GatewayPresenceRepository.Change] {
        state.withLock { state in
            defer { state.changes = [:] }
            return state.changes.map { device, change in
                GatewayPresenceRepository.Change(deviceID: device, appID: change?.appID, at: change?.at ?? Date())
            }
        }
    }

    /// Puts back changes whose write failed, unless the device changed again since.
    func restore(_ changes: [GatewayPresenceRepository.Change]) {
        state.withLock { state in
            for change in changes where state.changes[change.deviceID] == nil {
                state.changes[change.deviceID] = .some(change.appID.map { ($0, change.at) })
            }
        }
    }

    /// Queues every live connection as connected again (its presence row was lost with the
    /// gateway's lease row, during a long database outage).
    func requeueAll() {
        state.withLock { state in
            for (device, entry) in state.entries where state.changes[device] == nil {
                state.changes[device] = .some((entry.appID, Date()))
            }
        }
    }
}
