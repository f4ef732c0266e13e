import Foundation

/// A notification centre in memory: what a phone would show and hold, for simulated phones
/// (`herald dev phones`), tests, and Linux programs that speak for a device. It keeps what was
/// shown, scheduled and removed, so a caller can check what a user would have seen.
public actor InMemoryNotificationCenter: HeraldNotificationCenter {
    /// Every notification added, in order (a replaced one stays in this history).
    public private(set) var added: [LocalNotification] = []
    public private(set) var deliveredRecords: [NotificationRecord] = []
    public private(set) var pendingRecords: [NotificationRecord] = []
    public private(set) var removedDelivered: [String] = []
    public private(set) var removedPending: [String] = []

    public init() {}

    public func delivered() async -> [NotificationRecord] { deliveredRecords }
    public func pending() async -> [NotificationRecord] { pendingRecords }

    public func removeDelivered(identifiers: [String]) async {
        removedDelivered += identifiers
        deliveredRecords.removeAll { identifiers.contains($0.identifier) }
    }

    public func removePending(identifiers: [String]) async {
        removedPending += identifiers
        pendingRecords.removeAll { identifiers.contains($0.identifier) }
    }

    public func add(_ notification: LocalNotification) async throws {
        added.append(notification)
        let record = NotificationRecord(
            identifier: notification.identifier,
            pushID: notification.userInfo[HeraldPayload.key]?["push_id"]?.stringValue.flatMap(UUID.init(uuidString:)))
        if notification.trigger == nil {
            deliveredRecords.removeAll { $0.identifier == notification.identifier }
            deliveredRecords.append(record)
        } else {
            pendingRecords.removeAll { $0.identifier == notification.identifier }
            pendingRecords.append(record)
        }
    }

    /// A notification the system showed without the app (an APNs alert while in the background).
    public func systemDelivered(_ record: NotificationRecord) {
        deliveredRecords.append(record)
    }
}

/// Storage in memory, for simulated phones and tests: gone with the process.
public final class InMemoryStorage: HeraldStorage, @unchecked Sendable {
    // Guarded by `lock`.
    private let lock = NSLock()
    private var values: [String: Data] = [:]

    public init() {}

    public func load<Value: Decodable>(_ type: Value.Type, named name: String) -> Value? {
        lock.withLock { values[name] }.flatMap { try? JSONDecoder().decode(type, from: $0) }
    }

    public func save<Value: Encodable>(_ value: Value, named name: String) throws {
        let data = try JSONEncoder().encode(value)
        lock.withLock { values[name] = data }
    }
}
