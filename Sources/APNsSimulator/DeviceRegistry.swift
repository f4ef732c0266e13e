import HeraldAPNsVocabulary
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
///
/// Tokens of up to 32 bytes (64 hex digits: every token Apple issues today) are kept as their
/// bytes, four words inline, and each topic once, in a ``TokenTable``; a lookup hashes 32 bytes
/// and compares four words, straight from the request's `:path`. Keyed by the hex String, the registry held two
/// heap Strings per device, and a lookup's String, hashing and `memcmp` were 4% of the machine
/// under `make bench-e2e`; apns-sim's peak RSS there (a million devices) fell from 363 to 233 MB.
/// Longer tokens (Apple has said tokens may grow) are kept by their lower-case hex.
public final class DeviceRegistry: Sendable {
    enum Lookup: Equatable {
        case deliverable
        case unknown
        case otherTopic
        case unregistered(at: Int64)
    }

    /// A token of at most 32 bytes: its bytes in four words, and its length.
    struct TokenBytes: Hashable {
        var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        var length: UInt8 = 0

        /// The token whose hex digits (either case) are `hex`, or nil if it is not hex of even
        /// length, or longer than 64 digits.
        init?(hex: UnsafeRawBufferPointer) {
            guard hex.count % 2 == 0, hex.count <= 64 else { return nil }
            // Each word gathered in a register from its sixteen digits (or fewer), then stored.
            func word(_ index: Int) -> UInt64? {
                var value: UInt64 = 0
                var shift: UInt64 = 60
                for position in min(hex.count, index * 16)..<min(hex.count, index * 16 + 16) {
                    guard let nibble = Hexadecimal.nibble(hex[position]) else { return nil }
                    value |= UInt64(nibble) << shift
                    shift &-= 4
                }
                return value
            }
            guard let first = word(0), let second = word(1), let third = word(2), let fourth = word(3) else {
                return nil
            }
            words = (first, second, third, fourth)
            length = UInt8(hex.count / 2)
        }

        init?(hex: String) {
            var hex = hex
            guard let token = hex.withUTF8({ TokenBytes(hex: UnsafeRawBufferPointer($0)) }) else { return nil }
            self = token
        }

        static func == (left: TokenBytes, right: TokenBytes) -> Bool {
            left.words == right.words && left.length == right.length
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(words.0)
            hasher.combine(words.1)
            hasher.combine(words.2)
            hasher.combine(words.3)
            hasher.combine(length)
        }
    }

    private struct Entry: Sendable {
        // The optional first, so that the entry packs into 16 bytes and a table slot into 64.
        let unregisteredAt: Int64?
        /// An index into `Table.topics`.
        let topic: UInt32
    }

    private struct Table {
        var byBytes = TokenTable<Entry>()
        /// Tokens longer than 32 bytes, and anything that is not hex, by their lower-case text.
        var byText: [String: Entry] = [:]
        var topics: [String] = []
        var topicIndexes: [String: UInt32] = [:]

        mutating func topicIndex(_ topic: String) -> UInt32 {
            if let index = topicIndexes[topic] { return index }
            let index = UInt32(topics.count)
            topics.append(topic)
            topicIndexes[topic] = index
            return index
        }
    }

    public let acceptAnyToken: Bool
    private let table = Mutex(Table())
    /// Whether any device was ever added (a benchmark with `acceptAnyToken` skips the lookup).
    private let hasDevices = Atomic<Bool>(false)

    public init(acceptAnyToken: Bool, devices: [SimulatedDevice] = []) {
        self.acceptAnyToken = acceptAnyToken
        add(devices)
    }

    /// Adds devices, replacing any with the same token.
    public func add(_ newDevices: [SimulatedDevice]) {
        if !newDevices.isEmpty { hasDevices.store(true, ordering: .releasing) }
        table.withLock { table in
            for device in newDevices {
                let entry = Entry(unregisteredAt: device.unregisteredAt, topic: table.topicIndex(device.topic))
                if let bytes = TokenBytes(hex: device.token) {
                    table.byBytes.set(entry, for: bytes)
                } else {
                    table.byText[device.token.lowercased()] = entry
                }
            }
        }
    }

    /// How many devices are registered.
    public var count: Int { table.withLock { $0.byBytes.count + $0.byText.count } }

    /// True when every well-formed token is deliverable (`acceptAnyToken` and no device
    /// registered): the simulator then need not even read the token.
    var acceptsEveryToken: Bool { acceptAnyToken && !hasDevices.load(ordering: .acquiring) }

    /// What a push to the token whose hex digits are `tokenHex` (either case, as the request's
    /// path carries them) for `appTopic` (the bundle id, topic suffixes removed) meets.
    func lookup(tokenHex: UnsafeRawBufferPointer, appTopic: Substring) -> Lookup {
        let bytes = TokenBytes(hex: tokenHex)
        let text = bytes == nil ? String(decoding: tokenHex, as: UTF8.self).lowercased() : nil
        let found: (topic: String, unregisteredAt: Int64?)? = table.withLock { table in
            let entry = bytes.map { table.byBytes[$0] } ?? text.flatMap { table.byText[$0] }
            return entry.map { (table.topics[Int($0.topic)], $0.unregisteredAt) }
        }
        guard let found else { return acceptAnyToken ? .deliverable : .unknown }
        guard found.topic == appTopic else { return .otherTopic }
        if let unregisteredAt = found.unregisteredAt { return .unregistered(at: unregisteredAt) }
        return .deliverable
    }
}
