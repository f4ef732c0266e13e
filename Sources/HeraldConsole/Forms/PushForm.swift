import Foundation
import HeraldAPIContract

/// The compose page's form, as the browser posts it (every field text, absent when empty), and
/// its translation into the Open API's `PushRequest`.
///
/// The translation checks only what a form can get wrong that JSON cannot (a number that is not
/// one, custom data that is not a JSON object); everything else is the operations' to judge, so
/// the console and the API accept and refuse the same pushes.
struct PushForm: Codable, Sendable, Equatable {
    /// `all`, `tags`, `aliases` or `ids`.
    var audience: String?
    var tagsAny: String?
    var tagsAll: String?
    var tagsNone: String?
    var aliases: String?
    var registrationIDs: String?
    /// `production`, `sandbox`, or empty for both.
    var environment: String?
    var title: String?
    var subtitle: String?
    var body: String?
    var badge: String?
    var sound: String?
    var category: String?
    var threadID: String?
    /// `on` when the checkbox is ticked.
    var silent: String?
    /// A JSON object of custom top-level keys.
    var data: String?
    var collapseID: String?
    var timeToLiveSeconds: String?
    /// `YYYY-MM-DDTHH:MM` in UTC (a `datetime-local` field).
    var scheduledAt: String?
    /// `none`, `rate` or `deadline`.
    var throttle: String?
    var throttlePerSecond: String?
    var finishWithinMinutes: String?
    /// The push a correction replaces.
    var replaces: String?
    /// `transactional`, `campaign`, or empty for the default (transactional for an unthrottled
    /// list audience).
    var priorityClass: String?
    /// `HH:MM` in each device's own time zone (docs/local-time.md), and its optional date.
    var localTime: String?
    var localDate: String?
    /// `skip` (empty: the default) or `hold`.
    var quietHours: String?
    /// `auto` (empty: the default), `apns` or `online` (docs/gateway.md).
    var channel: String?
    /// `on`: leave out the devices whose notifications are off (docs/engagement.md).
    var skipUnauthorized: String?
    /// A holdout, in percent of the audience (0 to 50; docs/engagement.md#ab-tests).
    var holdoutPercent: String?

    enum CodingKeys: String, CodingKey {
        case audience, environment, title, subtitle, body, badge, sound, category, silent, data, throttle, replaces
        case channel
        case tagsAny = "tags_any"
        case tagsAll = "tags_all"
        case tagsNone = "tags_none"
        case aliases
        case registrationIDs = "registration_ids"
        case threadID = "thread_id"
        case collapseID = "collapse_id"
        case timeToLiveSeconds = "ttl_seconds"
        case scheduledAt = "scheduled_at"
        case throttlePerSecond = "throttle_per_second"
        case finishWithinMinutes = "finish_within_minutes"
        case priorityClass = "priority_class"
        case localTime = "local_time"
        case localDate = "local_date"
        case quietHours = "quiet_hours"
        case skipUnauthorized = "skip_unauthorized"
        case holdoutPercent = "holdout_percent"
    }

    /// A form field the browser got wrong, named as the form names it.
    struct Problem: Error, Equatable {
        var field: String
        var message: String
    }

    /// The form as the Open API's push request.
    /// - Throws: ``Problem`` for a field that cannot become what the request needs.
    func request() throws(Problem) -> Components.Schemas.PushRequest {
        var json: [String: Any] = ["audience": try audienceJSON()]
        var notification: [String: Any] = [:]
        var alert: [String: Any] = [:]
        if let title = Self.text(title) { alert["title"] = title }
        if let subtitle = Self.text(subtitle) { alert["subtitle"] = subtitle }
        if let body = Self.text(body) { alert["body"] = body }
        if !alert.isEmpty { notification["alert"] = alert }
        if let badge = Self.text(badge) { notification["badge"] = try Self.integer(badge, field: "badge") }
        if let sound = Self.text(sound) { notification["sound"] = sound }
        if let category = Self.text(category) { notification["category"] = category }
        if let threadID = Self.text(threadID) { notification["thread_id"] = threadID }
        if silent == "on" { notification["silent"] = true }
        if let data = Self.text(data) {
            guard let object = try? JSONSerialization.jsonObject(with: Data(data.utf8)), object is [String: Any]
            else {
                throw Problem(
                    field: "data", message: #"Custom data is a JSON object, such as {"order": 42, "screen": "sale"}."#)
            }
            notification["data"] = object
        }
        json["notification"] = notification
        var options: [String: Any] = [:]
        if let collapseID = Self.text(collapseID) { options["collapse_id"] = collapseID }
        if let ttl = Self.text(timeToLiveSeconds) {
            options["time_to_live_seconds"] = try Self.integer(ttl, field: "ttl_seconds")
        }
        if let scheduledAt = Self.text(scheduledAt) { options["scheduled_at"] = try Self.utcTimestamp(scheduledAt) }
        switch throttle ?? "none" {
        case "rate":
            options["throttle"] = [
                "per_second": try Self.integer(Self.text(throttlePerSecond) ?? "", field: "throttle_per_second")
            ]
        case "deadline":
            let minutes = try Self.integer(Self.text(finishWithinMinutes) ?? "", field: "finish_within_minutes")
            options["throttle"] = ["finish_within_seconds": minutes * 60]
        default:
            break
        }
        if let replaces = Self.text(replaces) { options["replaces"] = replaces }
        if let priorityClass = Self.text(priorityClass) { options["priority_class"] = priorityClass }
        if let localTime = Self.text(localTime) {
            var local: [String: Any] = ["time": localTime]
            if let localDate = Self.text(localDate) { local["date"] = localDate }
            options["local_time"] = local
        } else if Self.text(localDate) != nil {
            throw Problem(field: "local_time", message: "A local date goes with a local time (HH:MM).")
        }
        if let quietHours = Self.text(quietHours) {
            guard quietHours == "skip" || quietHours == "hold" else {
                throw Problem(field: "quiet_hours", message: "Quiet hours are skipped or held.")
            }
            options["quiet_hours"] = quietHours
        }
        if let channel = Self.text(channel) {
            guard ["auto", "apns", "online"].contains(channel) else {
                throw Problem(field: "channel", message: "The channel is automatic, APNs only or online only.")
            }
            options["channel"] = channel
        }
        if skipUnauthorized == "on" { options["skip_unauthorized"] = true }
        if let text = Self.text(holdoutPercent) {
            guard let percent = Double(text), (0...50).contains(percent) else {
                throw Problem(field: "holdout_percent", message: "A holdout is 0 to 50 % of the audience.")
            }
            if percent > 0 { options["holdout"] = percent / 100 }
        }
        if !options.isEmpty { json["options"] = options }
        do {
            let encoded = try JSONSerialization.data(withJSONObject: json)
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            return try decoder.decode(Components.Schemas.PushRequest.self, from: encoded)
        } catch {
            throw Problem(field: "audience", message: "This push cannot be expressed: \(error)")
        }
    }

    private func audienceJSON() throws(Problem) -> [String: Any] {
        var audience: [String: Any] = [:]
        switch self.audience ?? "all" {
        case "all":
            audience["all"] = true
        case "tags":
            var tags: [String: Any] = [:]
            for (name, value) in [("any", tagsAny), ("all", tagsAll), ("none", tagsNone)] {
                let list = Self.list(value)
                if !list.isEmpty { tags[name] = list }
            }
            guard tags["any"] != nil || tags["all"] != nil else {
                throw Problem(field: "tags_any", message: "Name at least one tag the devices must have (any or all).")
            }
            audience["tags"] = tags
        case "aliases":
            let aliases = Self.list(aliases)
            guard !aliases.isEmpty else {
                throw Problem(field: "aliases", message: "Name at least one alias (your user ids), one per line.")
            }
            audience["aliases"] = aliases
        case "ids":
            let texts = Self.list(registrationIDs)
            guard !texts.isEmpty else {
                throw Problem(field: "registration_ids", message: "Name at least one registration id, one per line.")
            }
            var ids: [Int] = []
            for text in texts {
                guard let id = Int(text), id > 0 else {
                    throw Problem(
                        field: "registration_ids", message: "\"\(text)\" is not a registration id (a positive number).")
                }
                ids.append(id)
            }
            audience["registration_ids"] = ids
        default:
            throw Problem(field: "audience", message: "Choose who gets the push.")
        }
        if let environment = Self.text(environment) { audience["environment"] = environment }
        return audience
    }

    /// `text` trimmed, or nil when nothing is left.
    static func text(_ text: String?) -> String? {
        guard let trimmed = text?.trimmingCharacters(in: .whitespacesAndNewlines), !trimmed.isEmpty else { return nil }
        return trimmed
    }

    /// The items of a list typed one per line or separated by commas.
    static func list(_ text: String?) -> [String] {
        (text ?? "").split(whereSeparator: { $0 == "," || $0.isNewline }).compactMap { Self.text(String($0)) }
    }

    private static func integer(_ text: String, field: String) throws(Problem) -> Int {
        guard let value = Int(text) else { throw Problem(field: field, message: "\"\(text)\" is not a whole number.") }
        return value
    }

    /// `YYYY-MM-DDTHH:MM[:SS]` read as UTC, in RFC 3339.
    private static func utcTimestamp(_ text: String) throws(Problem) -> String {
        let seconds = text.count == 16 ? text + ":00" : text
        let formatter = ISO8601DateFormatter()
        guard let date = formatter.date(from: seconds + "Z") else {
            throw Problem(field: "scheduled_at", message: "A time is YYYY-MM-DD HH:MM, in UTC.")
        }
        return formatter.string(from: date)
    }
}
