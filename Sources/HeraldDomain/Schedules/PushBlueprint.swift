import Foundation

/// What a schedule's every occurrence becomes: a push composed once, when the schedule was saved,
/// by the Open API's rules (audience, rendered payload or template, type, priority, class,
/// throttle), with its time to live relative to the occurrence. Stored as `schedules.blueprint`.
public struct PushBlueprint: Codable, Sendable, Equatable {
    public var audienceJSON: String
    public var notificationJSON: String
    public var optionsJSON: String
    public var payload: Data
    public var template: Data?
    public var pushType: String
    public var priority: Int
    public var priorityClass: String
    /// The caller's collapse id; nil: each occurrence's own push id.
    public var collapseID: String?
    public var timeToLiveSeconds: Int?
    public var throttlePerSecond: Int?
    public var finishWithinSeconds: Int?
    /// A local time (without a date: each occurrence gives it), quiet hours held (docs/local-time.md).
    public var timing: PushTiming?

    public init(
        audienceJSON: String, notificationJSON: String, optionsJSON: String, payload: [UInt8], template: [UInt8]?,
        pushType: String, priority: Int, priorityClass: PushPriorityClass, collapseID: String?,
        timeToLiveSeconds: Int?, throttlePerSecond: Int?, finishWithinSeconds: Int?, timing: PushTiming? = nil
    ) {
        self.timing = timing
        self.audienceJSON = audienceJSON
        self.notificationJSON = notificationJSON
        self.optionsJSON = optionsJSON
        self.payload = Data(payload)
        self.template = template.map { Data($0) }
        self.pushType = pushType
        self.priority = priority
        self.priorityClass = priorityClass.rawValue
        self.collapseID = collapseID
        self.timeToLiveSeconds = timeToLiveSeconds
        self.throttlePerSecond = throttlePerSecond
        self.finishWithinSeconds = finishWithinSeconds
    }

    /// The push of the occurrence at `occurrence`: its idempotency key names the schedule and the
    /// occurrence, so however many centers fire it, and however often, it is created once.
    ///
    /// A push at a local time gets the occurrence's date: the occurrence is when the first time
    /// zone (UTC+14) reaches the time that day (``ScheduleTiming/atLocalTime(_:)``).
    public func push(id: UUID, appID: UUID, scheduleID: UUID, occurrence: Date) -> NewPush {
        var timing = self.timing
        if timing?.localTime != nil {
            timing?.localDate = PushTiming.LocalDate(occurrence, in: PushTiming.earliestZone)
            timing?.timeToLiveSeconds = timeToLiveSeconds
        } else if timing?.quietHours == .hold {
            timing?.timeToLiveSeconds = timeToLiveSeconds
        }
        return NewPush(
            id: id, appID: appID, audienceJSON: audienceJSON, notificationJSON: notificationJSON,
            optionsJSON: optionsJSON, payload: Array(payload), template: template.map { Array($0) },
            pushType: pushType, priority: priority,
            priorityClass: PushPriorityClass(rawValue: priorityClass) ?? .campaign,
            expiresAt: timing?.localTime != nil
                ? nil : timeToLiveSeconds.map { occurrence.addingTimeInterval(TimeInterval($0)) },
            collapseID: collapseID, idempotencyKey: Self.idempotencyKey(scheduleID: scheduleID, occurrence: occurrence),
            throttlePerSecond: throttlePerSecond, finishWithinSeconds: finishWithinSeconds, timing: timing)
    }

    /// `schedule:<id>:<occurrence in Unix seconds>`.
    public static func idempotencyKey(scheduleID: UUID, occurrence: Date) -> String {
        "schedule:\(scheduleID.uuidString.lowercased()):\(Int64(occurrence.timeIntervalSince1970))"
    }

    public var json: String { storedJSON }

    public init(json: String) throws {
        self = try JSONDecoder().decode(PushBlueprint.self, from: Data(json.utf8))
    }
}
