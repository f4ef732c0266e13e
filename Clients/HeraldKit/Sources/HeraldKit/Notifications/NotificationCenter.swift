import Foundation

/// A notification the system shows (delivered) or will show (pending), as HeraldKit needs to
/// know it: its request identifier and what Herald put in it.
///
/// On iOS a remote notification's request identifier is its `apns-collapse-id` when it has one,
/// and every Herald push has one (docs/api.md, "The collapse id"); HeraldKit shows a push that
/// came over the long connection under the same identifier, so either copy replaces the other.
public struct NotificationRecord: Sendable, Hashable {
    public var identifier: String
    /// The `herald.push_id` of its payload, if Herald sent it.
    public var pushID: UUID?

    public init(identifier: String, pushID: UUID?) {
        self.identifier = identifier
        self.pushID = pushID
    }
}

/// A local notification HeraldKit asks the system to show: a push that came over the long
/// connection, or one the app schedules itself.
public struct LocalNotification: Sendable, Equatable {
    /// The request identifier: a push's collapse id, so a later push with the same collapse id
    /// (a replace) takes its place, as APNs' own copy would.
    public var identifier: String
    public var title: String?
    public var subtitle: String?
    public var body: String?
    public var badge: Int?
    public var sound: String?
    public var threadIdentifier: String?
    public var categoryIdentifier: String?
    /// The payload's JSON object, as `userInfo`.
    public var userInfo: [String: JSONValue]
    /// When to show it; nil shows it now.
    public var trigger: LocalTrigger?

    public init(
        identifier: String, title: String? = nil, subtitle: String? = nil, body: String? = nil, badge: Int? = nil,
        sound: String? = nil, threadIdentifier: String? = nil, categoryIdentifier: String? = nil,
        userInfo: [String: JSONValue] = [:], trigger: LocalTrigger? = nil
    ) {
        self.identifier = identifier
        self.title = title
        self.subtitle = subtitle
        self.body = body
        self.badge = badge
        self.sound = sound
        self.threadIdentifier = threadIdentifier
        self.categoryIdentifier = categoryIdentifier
        self.userInfo = userInfo
        self.trigger = trigger
    }
}

/// When a local notification fires: a date's components in a time zone, once or repeating
/// (Apple's `UNCalendarNotificationTrigger`).
public struct LocalTrigger: Sendable, Equatable {
    public enum Repeat: String, Sendable, Equatable {
        case never, daily, weekly
    }

    public var fireDate: Date
    public var timeZone: TimeZone
    public var repeats: Repeat

    public init(fireDate: Date, timeZone: TimeZone = .current, repeats: Repeat = .never) {
        self.fireDate = fireDate
        self.timeZone = timeZone
        self.repeats = repeats
    }

    /// The calendar components the trigger matches in its time zone: the full date once; hour,
    /// minute and second daily; and the weekday too weekly.
    public var dateComponents: DateComponents {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let fields: Set<Calendar.Component> =
            switch repeats {
            case .never: [.year, .month, .day, .hour, .minute, .second]
            case .daily: [.hour, .minute, .second]
            case .weekly: [.weekday, .hour, .minute, .second]
            }
        var components = calendar.dateComponents(fields, from: fireDate)
        components.timeZone = timeZone
        return components
    }
}

/// The system's notification centre, as HeraldKit uses it. HeraldKitNotifications implements it
/// over `UNUserNotificationCenter`; tests implement it in memory. Everything HeraldKit decides
/// (what to show, what a revoke removes) is decided outside it.
public protocol HeraldNotificationCenter: Sendable {
    /// The notifications shown now.
    func delivered() async -> [NotificationRecord]
    /// The notifications scheduled and not shown yet.
    func pending() async -> [NotificationRecord]
    func removeDelivered(identifiers: [String]) async
    func removePending(identifiers: [String]) async
    /// Shows (or schedules) a local notification; one with the identifier of a shown or pending
    /// one replaces it.
    func add(_ notification: LocalNotification) async throws
}
