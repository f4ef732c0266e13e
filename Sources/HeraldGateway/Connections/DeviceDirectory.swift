import Foundation
import HeraldStore
import NIOCore
import Synchronization

/// Which live connection of this gateway holds each device — at most one (a newer connection of
/// the same device replaces the older, which is closed `replaced`) — and the presence changes not
/// yet written to PostgreSQL (``PresenceWriter`` takes them in batches). Both change under one
/// lock, so the order of a device's connects and leaves is the order presence is written in.
///
/// Changes are written in numbered batches. A connection is welcomed once the batch holding its
/// claim is written (``whenWritten(_:_:)``), so a device its app sees connected is one a sender
/// can already route to.
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
        /// The batch the changes now waiting go into.
        var batch: UInt64 = 1
        /// Every batch up to this one is written (a failed batch's changes go into the next).
        var written: UInt64 = 0
        /// What waits for a batch to be written, by connection number.
        var waiters: [UInt64: (batch: UInt64, action: @Sendable () -> Void)] = [:]
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
    /// - Returns: the connection it replaces, to close, and the batch the claim is written with.
    func claim(_ deviceID: Int64, _ entry: Entry) -> (replaced: Entry?, batch: UInt64) {
        state.withLock { state in
            let previous = state.entries[deviceID]
            state.entries[deviceID] = entry
            state.changes[deviceID] = .some((entry.appID, Date()))
            return (previous, state.batch)
        }
    }

    /// Runs `action` (at once, or on the writer's task) once `batch` is written, unless
    /// ``stopWaiting(_:)`` names `connectionID` first.
    func whenWritten(_ batch: UInt64, connectionID: UInt64, _ action: @escaping @Sendable () -> Void) {
        let now = state.withLock { state in
            guard state.written < batch else { return true }
            state.waiters[connectionID] = (batch, action)
            return false
        }
        if now { action() }
    }

    /// Forgets what `connectionID` waited for (it closed, or stopped waiting).
    func stopWaiting(_ connectionID: UInt64) {
        _ = state.withLock { $0.waiters.removeValue(forKey: connectionID) }
    }

    /// Connections waiting for their presence to be written.
    var waiting: Int { state.withLock { $0.waiters.count } }

    /// Forgets `deviceID`'s connection if it is still `connectionID`'s (a replaced connection's
    /// close changes nothing).
    func release(_ deviceID: Int64, connectionID: UInt64) {
        state.withLock { state in
            guard state.entries[deviceID]?.connectionID == connectionID else { return }
            state.entries[deviceID] = nil
            state.changes[deviceID] = .some(nil)
        }
    }

    /// The changes not yet written, which are no longer kept here, and their batch's number.
    func takeChanges() -> (changes: [GatewayPresenceRepository.Change], batch: UInt64) {
        state.withLock { state in
            defer {
                state.changes = [:]
                state.batch += 1
            }
            let changes = state.changes.map { device, change in
                GatewayPresenceRepository.Change(deviceID: device, appID: change?.appID, at: change?.at ?? Date())
            }
            return (changes, state.batch)
        }
    }

    /// `batch` (and every one before it) is written: what waited for it runs.
    func written(_ batch: UInt64) {
        let ready = state.withLock { state in
            state.written = max(state.written, batch)
            let written = state.written
            let ready = state.waiters.filter { $0.value.batch <= written }
            for connection in ready.keys { state.waiters[connection] = nil }
            return ready
        }
        for waiter in ready.values { waiter.action() }
    }

    /// Puts back changes whose write failed (into the batch now waiting, whose write then stands
    /// for theirs), unless the device changed again since.
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
