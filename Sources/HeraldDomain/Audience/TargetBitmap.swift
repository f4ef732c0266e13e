import HeraldRecords

/// The devices of one fan-out page a campaign put into job batches, as bits over the page's
/// registration-id range (`push_targets`): bit `i` (most significant first) is device
/// `firstDevice + i`. A page of 10,000 devices with ids close together is ~1.3 KB.
public struct TargetBitmap: Sendable, Equatable {
    public let firstDevice: Int64
    public let lastDevice: Int64
    public private(set) var bits: [UInt8]

    /// No device of `firstDevice...lastDevice` yet.
    public init(firstDevice: Int64, lastDevice: Int64) {
        self.firstDevice = firstDevice
        self.lastDevice = lastDevice
        bits = [UInt8](repeating: 0, count: Int((lastDevice - firstDevice) / 8 + 1))
    }

    /// A stored one; bits past the range's end are ignored.
    public init(firstDevice: Int64, lastDevice: Int64, bits: [UInt8]) {
        self.firstDevice = firstDevice
        self.lastDevice = lastDevice
        self.bits = bits
    }

    /// Adds `device` (inside the range).
    public mutating func insert(_ device: Int64) {
        let offset = Int(device - firstDevice)
        bits[offset >> 3] |= 0x80 >> UInt8(offset & 7)
    }

    public func contains(_ device: Int64) -> Bool {
        guard device >= firstDevice, device <= lastDevice else { return false }
        let offset = Int(device - firstDevice)
        guard offset >> 3 < bits.count else { return false }
        return bits[offset >> 3] & (0x80 >> UInt8(offset & 7)) != 0
    }
}

extension AudiencePage {
    /// The devices at the indexes `keep` says yes to, with their groups and values, in order.
    public func keeping(_ keep: (Int) -> Bool) -> AudiencePage {
        var page = AudiencePage(
            devices: DeviceTokens(reservingCapacity: count, valuesPerDevice: devices.valuesPerDevice),
            groupIndexes: [], groups: groups)
        page.groupIndexes.reserveCapacity(count)
        for index in 0..<count where keep(index) {
            page.devices.append(index, of: devices)
            page.groupIndexes.append(groupIndexes[index])
        }
        return page
    }
}
