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
        let connection: NIOLoopBound<GatewayConnectionHandler>
    }

    private struct State {
        var entries: [Int64: Entry] = [:]
        /// The latest change of each device not yet written: its app when it connected, nil
        /// when it left.
        var changes: [Int64: UUID?] = [:]
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

    /// Makes `entry` the connection of `deviceID` (of `appID`).
    /// - Returns: the connection it replaces, to close.
    func claim(_ deviceID: Int64, appID: UUID, _ entry: Entry) -> Entry? {
        state.withLock { state in
            let previous = state.entries[deviceID]
            state.entries[deviceID] = entry
            state.changes[deviceID] = .some(appID)
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
            return state.changes.map { GatewayPresenceRepository.Change(deviceID: $0.key, appID: $0.value) }
        }
    }

    /// Puts back changes whose write failed, unless the device changed again since.
    func restore(_ changes: [GatewayPresenceRepository.Change]) {
        state.withLock { state in
            for change in changes where state.changes[change.deviceID] == nil {
                state.changes[change.deviceID] = .some(change.appID)
            }
        }
    }
}
