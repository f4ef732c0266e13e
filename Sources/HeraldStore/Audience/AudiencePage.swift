import HeraldAPNs

/// Devices and their tokens, packed for the fan-out's hot path: three flat arrays instead of an
/// object (and a token array) per device, so a page of ten thousand devices costs a handful of
/// allocations, not tens of thousands.
public struct DeviceTokens: Sendable, Equatable {
    /// Registration ids, in the order the devices were added.
    public private(set) var deviceIDs: [Int64] = []
    /// Every token's bytes, one after another.
    public private(set) var tokenBytes: [UInt8] = []
    /// Where each token ends in `tokenBytes`.
    public private(set) var tokenEnds: [Int32] = []
    /// A templated push's personalization values (``AudienceSelection/personalization``, in its
    /// order), `valuesPerDevice` a device, one after another; a missing value is empty.
    public private(set) var valueBytes: [UInt8] = []
    /// Where each value ends in `valueBytes`.
    public private(set) var valueEnds: [Int32] = []
    public private(set) var valuesPerDevice = 0

    public init() {}

    public init(reservingCapacity capacity: Int, tokenLength: Int = 32, valuesPerDevice: Int = 0) {
        self.valuesPerDevice = valuesPerDevice
        if valuesPerDevice > 0 { valueEnds.reserveCapacity(capacity * valuesPerDevice) }
        deviceIDs.reserveCapacity(capacity)
        tokenEnds.reserveCapacity(capacity)
        tokenBytes.reserveCapacity(capacity * tokenLength)
    }

    public var count: Int { deviceIDs.count }
    public var isEmpty: Bool { deviceIDs.isEmpty }

    /// The token of the device at `index`.
    public func token(at index: Int) -> ArraySlice<UInt8> {
        tokenBytes[(index == 0 ? 0 : Int(tokenEnds[index - 1]))..<Int(tokenEnds[index])]
    }

    /// Value `field` of the device at `index` (empty when it has none).
    public func value(_ field: Int, at index: Int) -> ArraySlice<UInt8> {
        let position = index * valuesPerDevice + field
        return valueBytes[(position == 0 ? 0 : Int(valueEnds[position - 1]))..<Int(valueEnds[position])]
    }

    public mutating func append(deviceID: Int64, token: some Collection<UInt8>) {
        deviceIDs.append(deviceID)
        tokenBytes.append(contentsOf: token)
        tokenEnds.append(Int32(tokenBytes.count))
    }

    /// Appends one personalization value of the device appended last (nil: it has none); each
    /// device gets ``valuesPerDevice`` of them, in order.
    public mutating func appendValue(_ value: (some Collection<UInt8>)?) {
        if let value { valueBytes.append(contentsOf: value) }
        valueEnds.append(Int32(valueBytes.count))
    }

    /// Copies device `index` of `other` (with its values) to the end.
    public mutating func append(_ index: Int, of other: DeviceTokens) {
        append(deviceID: other.deviceIDs[index], token: other.token(at: index))
        guard other.valuesPerDevice > 0 else { return }
        valuesPerDevice = other.valuesPerDevice
        for field in 0..<other.valuesPerDevice { appendValue(other.value(field, at: index)) }
    }
}

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
