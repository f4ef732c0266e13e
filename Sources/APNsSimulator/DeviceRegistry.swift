import Synchronization

/// A device the simulator knows: its token, the topic (bundle id) it was issued for and, if the
/// app was uninstalled, when APNs learned it (410 Unregistered carries that time).
public struct SimulatedDevice: Codable, Sendable, Hashable {
    public var token: String
    public var topic: String
    /// Milliseconds since 1970 at which the token stopped being valid; nil while it is valid.
    public var unregisteredAt: Int64?

    public init(token: String, topic: String, unregisteredAt: Int64? = nil) {
        self.token = token
        self.topic = topic
        self.unregisteredAt = unregisteredAt
    }
}

/// The device tokens the simulator accepts, shared by all connections; devices can be added at
/// run time. With `acceptAnyToken`, a well-formed token it does not know is treated as a valid
/// device of whatever topic it is sent to (handy for benchmarks); known devices keep their rules.
public final class DeviceRegistry: Sendable {
    enum Lookup: Equatable {
        case deliverable
        case unknown
        case otherTopic
        case unregistered(at: Int64)
    }

    private struct Entry: Sendable {
        let topic: String
        let unregisteredAt: Int64?
    }

    public let acceptAnyToken: Bool
    private let devices = Mutex<[String: Entry]>([:])
    /// Whether any device was ever added (a benchmark with `acceptAnyToken` skips the lookup).
    private let hasDevices = Atomic<Bool>(false)

    public init(acceptAnyToken: Bool, devices: [SimulatedDevice] = []) {
        self.acceptAnyToken = acceptAnyToken
        add(devices)
    }

    /// Adds devices, replacing any with the same token.
    public func add(_ newDevices: [SimulatedDevice]) {
        if !newDevices.isEmpty { hasDevices.store(true, ordering: .releasing) }
        devices.withLock { table in
            for device in newDevices {
                table[device.token.lowercased()] = Entry(topic: device.topic, unregisteredAt: device.unregisteredAt)
            }
        }
    }

    /// How many devices are registered.
    public var count: Int { devices.withLock { $0.count } }

    /// True when every well-formed token is deliverable (`acceptAnyToken` and no device
    /// registered): the simulator then need not even read the token.
    var acceptsEveryToken: Bool { acceptAnyToken && !hasDevices.load(ordering: .acquiring) }

    /// What a push to `token` for `appTopic` (the bundle id, topic suffixes removed) meets.
    /// `token` must be lower-case hex.
    func lookup(token: String, appTopic: Substring) -> Lookup {
        let entry = devices.withLock { $0[token] }
        guard let entry else { return acceptAnyToken ? .deliverable : .unknown }
        guard entry.topic == appTopic else { return .otherTopic }
        if let unregisteredAt = entry.unregisteredAt { return .unregistered(at: unregisteredAt) }
        return .deliverable
    }
}
