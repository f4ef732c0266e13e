import NIOCore
import Synchronization

/// Which live connection of this gateway holds each device: at most one (a newer connection of
/// the same device replaces the older, which is closed `replaced`). The look-up the routing of
/// pushes to this gateway will read.
final class DeviceDirectory: Sendable {
    /// A connection, reachable from any thread through its event loop.
    struct Entry: Sendable {
        let connectionID: UInt64
        let connection: NIOLoopBound<GatewayConnectionHandler>
    }

    private let entries = Mutex<[Int64: Entry]>([:])

    /// Devices with a live connection here.
    var count: Int { entries.withLock { $0.count } }

    /// Makes `entry` the connection of `deviceID`.
    /// - Returns: the connection it replaces, to close.
    func claim(_ deviceID: Int64, _ entry: Entry) -> Entry? {
        entries.withLock { entries in
            let previous = entries[deviceID]
            entries[deviceID] = entry
            return previous
        }
    }

    /// Forgets `deviceID`'s connection if it is still `connectionID`'s.
    func release(_ deviceID: Int64, connectionID: UInt64) {
        entries.withLock { entries in
            if entries[deviceID]?.connectionID == connectionID { entries[deviceID] = nil }
        }
    }
}
