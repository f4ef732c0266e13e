/// Devices and their tokens, packed: three flat arrays instead of an object (and a token array)
/// per device, so a page of ten thousand devices costs a handful of allocations, not tens of
/// thousands. One shape on both sides of `herald.jobs`: herald-center's audience pages and batch
/// cuts, the targets the center writes into a job record
/// (``Herald_V1_JobBatch/encodedRecord(targets:payloadIndexes:)``), and the targets herald-sender
/// reads back out of it (``PackedJobBatch``).
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

    /// The length in bytes of the token at `index`.
    public func tokenLength(at index: Int) -> Int {
        Int(tokenEnds[index]) - (index == 0 ? 0 : Int(tokenEnds[index - 1]))
    }

    /// Calls `body` with the bytes of the token at `index`, valid only during the call.
    public func withToken<Result>(at index: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows
        -> Result
    {
        let start = index == 0 ? 0 : Int(tokenEnds[index - 1])
        return try tokenBytes.withUnsafeBufferPointer { all in
            try body(UnsafeBufferPointer(rebasing: all[start..<Int(tokenEnds[index])]))
        }
    }

    /// Value `field` of the device at `index` (empty when it has none).
    public func value(_ field: Int, at index: Int) -> ArraySlice<UInt8> {
        let position = index * valuesPerDevice + field
        return valueBytes[(position == 0 ? 0 : Int(valueEnds[position - 1]))..<Int(valueEnds[position])]
    }

    /// The length of ``value(_:at:)`` (0: none), without slicing the bytes.
    @inlinable
    public func valueLength(_ field: Int, at index: Int) -> Int {
        let position = index * valuesPerDevice + field
        return Int(valueEnds[position]) - (position == 0 ? 0 : Int(valueEnds[position - 1]))
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

    /// ``append(deviceID:token:)`` for bytes in place (a COPY row's field). Not generic: a caller
    /// in another module would otherwise run the generic code, its type metadata looked up for
    /// each device.
    public mutating func append(deviceID: Int64, token: UnsafeRawBufferPointer) {
        deviceIDs.append(deviceID)
        tokenBytes.append(contentsOf: token)
        tokenEnds.append(Int32(tokenBytes.count))
    }

    /// ``appendValue(_:)`` for bytes in place (a COPY row's field), not generic for the same
    /// reason: each value looked its types up once per device (12 % of the center's CPU in a
    /// templated fan-out, docs/benchmarks.md).
    public mutating func appendValue(_ value: UnsafeRawBufferPointer?) {
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
