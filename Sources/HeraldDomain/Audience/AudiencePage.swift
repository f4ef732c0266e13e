import HeraldAPNsVocabulary
import HeraldRecords

/// Where a device's notifications go: its environment and app topic (bundle id). Every job
/// batch holds devices of one group only.
public struct AudienceGroup: Hashable, Sendable {
    public var environment: APNsEnvironment
    public var topic: String

    public init(environment: APNsEnvironment, topic: String) {
        self.environment = environment
        self.topic = topic
    }
}

/// A page of an audience in registration-id order: the devices with their tokens, and each
/// device's ``AudienceGroup`` as an index into `groups` (a push reaches few of them).
public struct AudiencePage: Sendable, Equatable {
    public var devices: DeviceTokens
    /// Device `i` belongs to `groups[groupIndexes[i]]`.
    public var groupIndexes: [UInt16]
    public var groups: [AudienceGroup]

    public init(devices: DeviceTokens = DeviceTokens(), groupIndexes: [UInt16] = [], groups: [AudienceGroup] = []) {
        self.devices = devices
        self.groupIndexes = groupIndexes
        self.groups = groups
    }

    /// A page of `targets` (tests and small audiences).
    public init(_ targets: [AudienceTarget]) {
        self.init()
        for target in targets {
            append(
                deviceID: target.deviceID, token: target.token,
                group: group(AudienceGroup(environment: target.environment, topic: target.topic)))
        }
    }

    public var count: Int { devices.count }
    public var isEmpty: Bool { devices.isEmpty }
    /// The last registration id: the cursor after this page.
    public var lastDeviceID: Int64? { devices.deviceIDs.last }

    /// The index of `group`, added if new.
    public mutating func group(_ group: AudienceGroup) -> UInt16 {
        if let index = groups.firstIndex(of: group) { return UInt16(index) }
        groups.append(group)
        return UInt16(groups.count - 1)
    }

    public mutating func append(deviceID: Int64, token: some Collection<UInt8>, group: UInt16) {
        devices.append(deviceID: deviceID, token: token)
        groupIndexes.append(group)
    }

    /// The same for bytes in place (a COPY row's field), not generic: see `DeviceTokens`' overload.
    public mutating func append(deviceID: Int64, token: UnsafeRawBufferPointer, group: UInt16) {
        devices.append(deviceID: deviceID, token: token)
        groupIndexes.append(group)
    }

    /// Device `index` as a target.
    public func target(at index: Int) -> AudienceTarget {
        let group = groups[Int(groupIndexes[index])]
        return AudienceTarget(
            deviceID: devices.deviceIDs[index], token: Array(devices.token(at: index)),
            environment: group.environment, topic: group.topic)
    }

    /// Every device as a target (an object each: for tests and small pages, not the fan-out).
    public var targets: [AudienceTarget] { (0..<count).map(target(at:)) }
}
