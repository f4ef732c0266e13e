import Foundation
import HeraldAPIContract
import HeraldAPNsVocabulary
import HeraldDomain
import HeraldStore
import OpenAPIRuntime

/// A push request checked and turned into what Herald stores: the audience, the rendered APNs
/// payload (checked against Apple's size limit here, not by a worker) and the options.
///
/// Pure logic: no I/O, so every rule is unit-tested.
struct PushComposer {
    /// Lists in an audience hold at most this many ids or aliases.
    static let maximumListSize = 1000
    static let maximumScheduleAhead: TimeInterval = 366 * 86_400

    struct Composed {
        var audience: PushAudience
        var notificationJSON: String
        var optionsJSON: String
        var payload: [UInt8]
        /// Placeholders and localized variants, when the notification has them (docs/templates.md).
        var personalization: Personalization?
        var pushType: APNsPushType
        var priority: APNsPriority
        var priorityClass: PushPriorityClass
        var expiresAt: Date?
        var collapseID: String?
        var scheduledAt: Date?
        var throttlePerSecond: Int?
        var finishWithinSeconds: Int?
        /// A local time, quiet hours held, a time to live per wave (docs/local-time.md).
        var timing: PushTiming?
        /// The push this one replaces (its collapse id is taken by the handler).
        var replaces: UUID?
        var warnings: [String]
        /// An A/B test's variants and holdout, and each variant's payload (`payload` is the first's).
        var split: PushSplit? = nil
        var variantPayloads: [[UInt8]] = []

        /// The largest payload as APNs and the phone get it: the largest variant with its
        /// defaults, and the `herald` key herald-center adds.
        var sentPayloadBytes: Int {
            personalization?.largestPayload
                ?? (variantPayloads.map(\.count).max() ?? payload.count) + HeraldPayloadKey.reservedBytes
        }
    }

    let now: Date

    init(now: Date = Date()) {
        self.now = now
    }

    func compose(_ request: Components.Schemas.PushRequest) throws(APIError) -> Composed {
        guard let variants = request.variants else { return try composeOne(request) }
        // An A/B test: the first variant's notification decides what every other part decides
        // for a plain push (its type, priority, size); each variant is then checked as it is.
        guard request.notification == nil, request.aps == nil, request.templateId == nil else {
            throw .invalid("variants", "give variants or one notification (a template, a raw aps), not both")
        }
        guard (2...PushSplit.maximumVariants).contains(variants.count) else {
            throw .invalid("variants", "an A/B test has 2 to \(PushSplit.maximumVariants) variants")
        }
        var first = request
        first.variants = nil
        first.winner = nil
        first.notification = variants[0].notification
        var composed = try prefixingErrors(with: "variants[0].") { () throws(APIError) in try composeOne(first) }
        try Self.checkABTest(priorityClass: composed.priorityClass, timing: composed.timing)
        guard composed.personalization == nil else {
            throw .invalid(
                "variants[0].notification",
                "a variant has no placeholders or localizations (send one notification, or variants without them)")
        }
        var names: Set<String> = []
        var split = PushSplit(variants: [], holdout: composed.split?.holdout ?? 0)
        composed.variantPayloads = []
        for (index, variant) in variants.enumerated() {
            let field = "variants[\(index)]"
            guard variant.name.utf8.count <= 32, !variant.name.isEmpty,
                variant.name.utf8.allSatisfy({ Self.variantNameBytes.contains($0) })
            else {
                throw .invalid("\(field).name", "a variant's name is 1 to 32 of A-Z a-z 0-9 . _ -")
            }
            guard names.insert(variant.name).inserted else {
                throw .invalid("\(field).name", "two variants are named \(variant.name); give each its own name")
            }
            let weight = variant.weight ?? 1
            guard (1...100).contains(weight) else { throw .invalid("\(field).weight", "a weight is 1 to 100") }
            split.variants.append(PushSplit.Variant(name: variant.name, weight: weight))
            var one = first
            one.notification = variant.notification
            // The first variant was composed above.
            let each =
                index == 0
                ? composed : try prefixingErrors(with: "\(field).") { () throws(APIError) in try composeOne(one) }
            guard each.personalization == nil else {
                throw .invalid(
                    "\(field).notification", "a variant has no placeholders or localizations")
            }
            guard each.pushType == composed.pushType else {
                throw .invalid(
                    "\(field).notification",
                    "every variant is the same kind of push: this one is \(each.pushType.rawValue), the first \(composed.pushType.rawValue)"
                )
            }
            composed.variantPayloads.append(each.payload)
        }
        if let winner = request.winner {
            guard (0.01...0.9).contains(winner.sample) else {
                throw .invalid("winner.sample", "the sample is a share of the audience from 0.01 to 0.9")
            }
            guard (1...604_800).contains(winner.waitSeconds) else {
                throw .invalid("winner.wait_seconds", "the wait before the pick is 1 to 604800 seconds (a week)")
            }
            split.sample = winner.sample
            split.waitSeconds = winner.waitSeconds
            // The rest goes out after the wait, with the push's expiration: it must outlast it.
            if let expiresAt = composed.expiresAt,
                expiresAt <= (composed.scheduledAt ?? now).addingTimeInterval(TimeInterval(winner.waitSeconds))
            {
                throw .invalid(
                    request.options?.timeToLiveSeconds != nil ? "options.time_to_live_seconds" : "options.expires_at",
                    "the rest of the audience gets the winner after wait_seconds: give a time to live longer than the wait"
                )
            }
        }
        composed.split = split
        composed.notificationJSON = Self.json(StoredVariants(variants: variants, winner: request.winner))
        return composed
    }

    /// An A/B test (variants, a holdout) is a campaign sent at once.
    static func checkABTest(priorityClass: PushPriorityClass, timing: PushTiming?) throws(APIError) {
        guard priorityClass == .campaign else {
            throw .invalid(
                "options.priority_class",
                "an A/B test (variants, a holdout) is a campaign: give an audience beyond a list, or priority_class campaign"
            )
        }
        guard timing?.localTime == nil, timing?.quietHours != .hold else {
            throw .invalid(
                "options.local_time", "an A/B test goes out at once: not at a local time, nor with quiet hours held")
        }
    }

    /// What an A/B test's `notification` is stored as (and shown in its status): its variants.
    struct StoredVariants: Encodable {
        var variants: [Components.Schemas.PushVariant]
        var winner: Components.Schemas.WinnerMode?
    }

    /// The bytes of a variant's name.
    static let variantNameBytes = Set(Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-".utf8))

    /// `body`'s error with `prefix` before the field it names (a variant's notification is
    /// checked as the push's would be, and its errors name the variant).
    private func prefixingErrors<T>(with prefix: String, _ body: () throws(APIError) -> T) throws(APIError) -> T {
        do {
            return try body()
        } catch {
            var error = error
            error.field = error.field.map { prefix + $0 }
            throw error
        }
    }

    /// A push with one notification (or a raw aps): checked and composed.
    private func composeOne(_ request: Components.Schemas.PushRequest) throws(APIError) -> Composed {
        if request.winner != nil {
            throw .invalid(
                "winner", "winner mode picks among variants: give 2 to \(PushSplit.maximumVariants) variants")
        }
        if request.templateId != nil {
            // The handler puts the stored template's notification in its place.
            throw .invalid("template_id", "name a template or give a notification (or a raw aps), not both")
        }
        let audience = try audience(request.audience)
        let options = request.options ?? .init()
        var warnings: [String] = []

        // The payload: a notification, or a raw aps dictionary (written as given).
        var payload: APNsPayload?
        var rawPayload: JSONValue?
        let isSilent: Bool
        switch (request.notification, request.aps) {
        case (let notification?, nil):
            if request.data != nil {
                throw .invalid("data", "with a notification, put custom keys in notification.data")
            }
            payload = try self.payload(notification)
            isSilent =
                notification.silent == true && notification.alert == nil && notification.sound == nil
                && notification.criticalSound == nil && notification.badge == nil
        case (nil, let aps?):
            var root = try custom(request.data, field: "data")
            root["aps"] = JSONValue(container: aps)
            rawPayload = .object(root)
            isSilent = false
        case (.some, .some):
            throw .invalid("aps", "send either a notification or a raw aps dictionary, not both")
        case (nil, nil):
            throw .invalid("notification", "a push needs a notification (or, for experts, a raw aps dictionary)")
        }

        let pushType =
            options.pushType.flatMap { APNsPushType(rawValue: $0.rawValue) } ?? (isSilent ? .background : .alert)
        let priority: APNsPriority
        if let requested = options.priority.flatMap({ APNsPriority(rawValue: $0.rawValue) }) {
            guard pushType.allowedPriorities.contains(requested) else {
                let allowed = pushType.allowedPriorities.map { String($0.rawValue) }.sorted().joined(separator: " or ")
                throw .invalid(
                    "options.priority", "Apple takes \(pushType.rawValue) pushes with priority \(allowed) only")
            }
            priority = requested
        } else {
            priority = pushType.defaultPriority
        }
        if options.skipUnauthorized == true, pushType != .alert {
            throw .invalid(
                "options.skip_unauthorized",
                "skip_unauthorized leaves out devices whose alerts are off; a \(pushType.rawValue) push shows no alert")
        }
        if request.notification?.silent == true, !isSilent {
            warnings.append(
                "silent is set together with an alert, sound or badge: the phone will show them; a background update carries none"
            )
        }

        var bytes: [UInt8] = []
        var personalization: Personalization?
        if let payload, let notification = request.notification {
            personalization = try Self.personalization(notification, payload: payload, pushType: pushType)
            bytes = personalization?.defaultPayload ?? payload.encoded()
        } else {
            rawPayload?.write(to: &bytes)
        }
        // As sent: with the `herald` key herald-center adds (HeraldPayloadKey).
        let sentBytes = bytes.count + HeraldPayloadKey.reservedBytes
        guard sentBytes <= pushType.maximumPayloadBytes else {
            throw APIError(
                .contentTooLarge, code: .payloadTooLarge, message: Self.tooLarge(sentBytes, for: pushType),
                field: payload == nil ? "aps" : "notification")
        }
        // After the payload's size: a text too long for the payload is answered with its size.
        if let notification = request.notification { try Self.checkLengths(of: notification) }

        // Timing.
        var timing = try Self.timing(options, now: now)
        var scheduledAt = try schedule(options.scheduledAt)
        if timing?.localTime != nil {
            guard scheduledAt == nil else {
                throw .invalid(
                    "options.scheduled_at",
                    "local_time sets when each device gets the push; leave scheduled_at out (local_time.date sets the day)"
                )
            }
            // Planned when the first time zone (UTC+14) reaches the time of a given date; without
            // a date, at once: every zone's next occurrence lies within a day.
            scheduledAt = timing?.localDate.flatMap { _ in timing?.earliestInstant() }.flatMap { $0 > now ? $0 : nil }
        }
        let start = scheduledAt ?? now
        let inWaves = timing?.localTime != nil || timing?.quietHours == .hold
        var expiresAt: Date?
        switch (options.timeToLiveSeconds, options.expiresAt) {
        case (let ttl?, nil):
            guard (1...2_592_000).contains(ttl) else {
                throw .invalid("options.time_to_live_seconds", "a time to live is 1 to 2592000 seconds (30 days)")
            }
            if inWaves {
                // Counted from each wave's start; a push at a local time has no single start.
                timing?.timeToLiveSeconds = ttl
            }
            expiresAt = timing?.localTime != nil ? nil : start.addingTimeInterval(TimeInterval(ttl))
        case (nil, let expiry?):
            guard expiry > start else {
                throw .invalid(
                    "options.expires_at", "expires_at must be after the push starts (now, or its scheduled_at)")
            }
            expiresAt = expiry
        case (.some, .some):
            throw .invalid("options.expires_at", "give a time to live or an absolute expiration, not both")
        case (nil, nil):
            expiresAt = nil
        }

        if let collapseID = options.collapseId, collapseID.isEmpty || collapseID.utf8.count > 64 {
            throw .invalid("options.collapse_id", "a collapse id is 1 to 64 bytes")
        }

        var throttlePerSecond: Int?
        var finishWithin: Int?
        if let throttle = options.throttle {
            switch (throttle.perSecond, throttle.finishWithinSeconds) {
            case (let rate?, nil):
                guard (1...1_000_000).contains(rate) else {
                    throw .invalid("options.throttle.per_second", "a throttle is 1 to 1000000 notifications a second")
                }
                throttlePerSecond = rate
            case (nil, let seconds?):
                guard (1...604_800).contains(seconds) else {
                    throw .invalid(
                        "options.throttle.finish_within_seconds", "finish_within_seconds is 1 to 604800 (a week)")
                }
                finishWithin = seconds
            default:
                throw .invalid("options.throttle", "a throttle is either per_second or finish_within_seconds")
            }
        }

        let priorityClass = try Self.priorityClass(
            options.priorityClass, audience: audience, throttled: options.throttle != nil, timed: inWaves)
        var split: PushSplit?
        if let holdout = options.holdout {
            guard (0...PushSplit.maximumHoldout).contains(holdout) else {
                throw .invalid("options.holdout", "a holdout is a share of the audience from 0 to 0.5")
            }
            split = PushSplit(variants: [PushSplit.Variant(name: "notification", weight: 1)], holdout: holdout)
        }
        if split != nil { try Self.checkABTest(priorityClass: priorityClass, timing: timing) }

        var replaces: UUID?
        if let text = options.replaces {
            guard let id = UUID(uuidString: text) else {
                throw .invalid("options.replaces", "replaces names a push id (a UUID)")
            }
            replaces = id
        }

        var notificationJSON = "{}"
        if let notification = request.notification {
            notificationJSON = Self.json(notification)
        } else if let aps = request.aps {
            notificationJSON = Self.json(RawNotification(aps: aps, data: request.data))
        }
        return Composed(
            audience: audience, notificationJSON: notificationJSON, optionsJSON: Self.json(options), payload: bytes,
            personalization: personalization, pushType: pushType, priority: priority, priorityClass: priorityClass,
            expiresAt: expiresAt,
            collapseID: options.collapseId,
            scheduledAt: scheduledAt, throttlePerSecond: throttlePerSecond, finishWithinSeconds: finishWithin,
            timing: timing, replaces: replaces, warnings: warnings, split: split,
            variantPayloads: split == nil ? [] : [bytes])
    }

    /// The push's priority class: the one asked for, else `transactional` for an unthrottled
    /// list audience (registration ids or aliases: a few thousand devices at most) and
    /// `campaign` for everything else. A transactional push must be both, so that the topic
    /// senders read first never carries a campaign.
    static func priorityClass(
        _ requested: Components.Schemas.PriorityClass?, audience: PushAudience, throttled: Bool, timed: Bool = false
    ) throws(APIError) -> PushPriorityClass {
        let list = audience.registrationIDs != nil || audience.aliases != nil
        switch requested {
        case nil:
            return list && !throttled && !timed ? .transactional : .campaign
        case .campaign:
            return .campaign
        case .transactional:
            guard list else {
                throw .invalid(
                    "options.priority_class",
                    "a transactional push names its devices (registration_ids or aliases); send a tag, segment, filter or broadcast audience as a campaign"
                )
            }
            guard !throttled else {
                throw .invalid(
                    "options.priority_class", "a transactional push is sent at once; a throttle is for campaigns")
            }
            guard !timed else {
                throw .invalid(
                    "options.priority_class",
                    "a transactional push is sent at once; local_time and quiet_hours hold are for campaigns")
            }
            return .transactional
        }
    }

    /// The stored audience, after the limits and "selects somebody" are checked.
    func audience(_ audience: Components.Schemas.Audience) throws(APIError) -> PushAudience {
        let ids = audience.registrationIds ?? []
        let aliases = audience.aliases ?? []
        guard ids.count <= Self.maximumListSize else {
            throw .invalid(
                "audience.registration_ids",
                "an audience names at most \(Self.maximumListSize) registration ids; use tags for more")
        }
        guard aliases.count <= Self.maximumListSize else {
            throw .invalid(
                "audience.aliases", "an audience names at most \(Self.maximumListSize) aliases; use tags for more")
        }
        if let bad = ids.firstIndex(where: { $0 < 1 }) {
            throw .invalid("audience.registration_ids[\(bad)]", "registration ids are positive numbers")
        }
        try checkStrings(aliases, field: "audience.aliases", maximumLength: 128)
        var tags: PushAudience.TagFilter?
        if let filter = audience.tags {
            for (name, list) in [("any", filter.any), ("all", filter.all), ("none", filter.none)] {
                guard let list else { continue }
                guard list.count <= 100 else { throw .invalid("audience.tags.\(name)", "at most 100 tags in one list") }
                try checkStrings(list, field: "audience.tags.\(name)", maximumLength: 64)
            }
            tags = .init(any: filter.any, all: filter.all, none: filter.none)
        }
        let everyone = audience.all == true
        let hasTagSelector = !(tags?.any ?? []).isEmpty || !(tags?.all ?? []).isEmpty || !(tags?.none ?? []).isEmpty
        let filter = try audience.filter.map { filter throws(APIError) in
            try Self.filter(filter, field: "audience.filter")
        }
        let segment = try audience.segmentId.map { text throws(APIError) in
            guard let id = UUID(uuidString: text) else {
                throw APIError.invalid("audience.segment_id", "segment_id is a segment's id (a UUID)")
            }
            return id
        }
        guard everyone || !ids.isEmpty || !aliases.isEmpty || hasTagSelector || filter != nil || segment != nil else {
            throw .invalid(
                "audience",
                "the audience selects nobody: set all to true, or name registration_ids, aliases, tags, a filter or a segment_id"
            )
        }
        return PushAudience(
            all: everyone ? true : nil, registrationIDs: ids.isEmpty ? nil : ids,
            aliases: aliases.isEmpty ? nil : aliases,
            tags: hasTagSelector ? tags : nil,
            environment: audience.environment?.store, filter: filter, segment: segment)
    }

    /// A filter of the contract checked and read (``AudienceFilter``); `field` names it in errors.
    static func filter(_ filter: Components.Schemas.DeviceFilter, field: String) throws(APIError) -> AudienceFilter {
        guard let json = try? JSONValue(encoding: filter) else { throw .invalid(field, "a filter is a JSON object") }
        do {
            return try AudienceFilter(json: json, path: field)
        } catch {
            throw .invalid(error.path, error.message)
        }
    }

    private func checkStrings(_ values: [String], field: String, maximumLength: Int) throws(APIError) {
        if let bad = values.firstIndex(where: { $0.isEmpty || $0.storedLength > maximumLength }) {
            throw .invalid("\(field)[\(bad)]", "each entry is 1 to \(maximumLength) characters")
        }
    }

    private func payload(_ notification: Components.Schemas.Notification) throws(APIError) -> APNsPayload {
        var payload = APNsPayload()
        if let alert = notification.alert {
            payload.alert = .details(
                .init(
                    title: alert.title, subtitle: alert.subtitle, body: alert.body, launchImage: alert.launchImage,
                    titleLocalizationKey: alert.titleLocKey, titleLocalizationArguments: alert.titleLocArgs,
                    subtitleLocalizationKey: alert.subtitleLocKey, subtitleLocalizationArguments: alert.subtitleLocArgs,
                    localizationKey: alert.locKey, localizationArguments: alert.locArgs))
        }
        if let badge = notification.badge {
            guard (0...1_000_000).contains(badge) else {
                throw .invalid("notification.badge", "a badge is 0 to 1000000")
            }
            payload.badge = badge
        }
        switch (notification.sound, notification.criticalSound) {
        case (let name?, nil):
            guard !name.isEmpty else { throw .invalid("notification.sound", "name a sound file, or \"default\"") }
            payload.sound = .named(name)
        case (nil, let critical?):
            let volume = critical.volume ?? 1
            guard (0...1).contains(volume) else {
                throw .invalid("notification.critical_sound.volume", "the volume is 0 to 1")
            }
            payload.sound = .critical(name: critical.name, volume: volume)
        case (.some, .some):
            throw .invalid("notification.critical_sound", "give a sound or a critical_sound, not both")
        case (nil, nil):
            break
        }
        payload.category = notification.category
        payload.threadID = notification.threadId
        payload.contentAvailable = notification.silent == true
        payload.mutableContent = notification.mutableContent == true
        payload.targetContentID = notification.targetContentId
        if let level = notification.interruptionLevel {
            payload.interruptionLevel = APNsPayload.InterruptionLevel(rawValue: level.rawValue)
        }
        if let score = notification.relevanceScore {
            guard (0...1).contains(score) else {
                throw .invalid("notification.relevance_score", "a relevance score is 0 to 1")
            }
            payload.relevanceScore = score
        }
        payload.custom = try custom(notification.data, field: "notification.data")
        return payload
    }

    private func custom(_ data: OpenAPIObjectContainer?, field: String) throws(APIError) -> [String: JSONValue] {
        guard let data else { return [:] }
        guard data.value["aps"] == nil else {
            throw .invalid(field, "custom data cannot use the key \"aps\", which is Apple's")
        }
        guard data.value[HeraldPayloadKey.name] == nil else {
            throw .invalid(
                field,
                "custom data cannot use the key \"herald\", which carries the push's id to the app (docs/api.md)")
        }
        var custom: [String: JSONValue] = [:]
        for (key, value) in data.value { custom[key] = JSONValue(any: value) }
        return custom
    }

    /// The message of a payload of `bytes` as sent (the `herald` key's bytes included) over `pushType`'s limit.
    static func tooLarge(_ bytes: Int, for pushType: APNsPushType) -> String {
        let error = APNsPayloadTooLarge(size: bytes, limit: pushType.maximumPayloadBytes, pushType: pushType)
        return
            "\(error.description) (counting the \(HeraldPayloadKey.reservedBytes) bytes of the push id Herald adds under \"herald\")"
    }

    /// `options.local_time` and `options.quiet_hours` read and checked; nil when neither is set.
    static func timing(_ options: Components.Schemas.PushOptions, now: Date) throws(APIError) -> PushTiming? {
        var timing = PushTiming()
        if let local = options.localTime {
            guard let time = PushTiming.LocalTime(local.time) else {
                throw .invalid("options.local_time.time", "local_time.time is HH:MM on a 24-hour clock, such as 09:00")
            }
            timing.localTime = time
            if let text = local.date {
                guard let date = PushTiming.LocalDate(text) else {
                    throw .invalid("options.local_time.date", "local_time.date is a calendar date, YYYY-MM-DD")
                }
                timing.localDate = date
                guard let earliest = timing.earliestInstant(), let latest = timing.latestInstant() else {
                    throw .invalid("options.local_time.date", "local_time.date is a calendar date, YYYY-MM-DD")
                }
                guard latest > now else {
                    throw .invalid(
                        "options.local_time.date",
                        "\(text) \(time) has passed in every time zone; choose a later date, or leave date out for the next \(time) in each zone"
                    )
                }
                guard earliest < now.addingTimeInterval(maximumScheduleAhead) else {
                    throw .invalid("options.local_time.date", "a push is scheduled at most a year ahead")
                }
            }
        }
        if let mode = options.quietHours {
            timing.quietHours = mode == .hold ? .hold : .skip
        }
        return timing.isEmpty ? nil : timing
    }

    private func schedule(_ scheduledAt: Date?) throws(APIError) -> Date? {
        guard let scheduledAt else { return nil }
        guard scheduledAt > now.addingTimeInterval(-60) else {
            throw .invalid("options.scheduled_at", "scheduled_at is in the past; leave it out to send now")
        }
        guard scheduledAt < now.addingTimeInterval(Self.maximumScheduleAhead) else {
            throw .invalid("options.scheduled_at", "a push is scheduled at most a year ahead")
        }
        return scheduledAt > now ? scheduledAt : nil
    }

    private struct RawNotification: Encodable {
        var aps: OpenAPIObjectContainer
        var data: OpenAPIObjectContainer?
    }

    /// The contract's maxLength on the notification's texts (Schemas/openapi.yaml), which the
    /// Open API's generated decoder does not check: JSON Schema counts Unicode scalars.
    /// - Throws: ``APIError`` naming the first text that is too long and its limit.
    static func checkLengths(of notification: Components.Schemas.Notification) throws(APIError) {
        let alert = notification.alert
        var texts: [(field: String, text: String?, limit: Int)] = [
            ("sound", notification.sound, 256), ("critical_sound.name", notification.criticalSound?.name, 256),
            ("category", notification.category, 256), ("thread_id", notification.threadId, 256),
            ("target_content_id", notification.targetContentId, 256),
            ("alert.title", alert?.title, 4096), ("alert.subtitle", alert?.subtitle, 4096),
            ("alert.body", alert?.body, 4096), ("alert.launch_image", alert?.launchImage, 1024),
            ("alert.title_loc_key", alert?.titleLocKey, 1024), ("alert.subtitle_loc_key", alert?.subtitleLocKey, 1024),
            ("alert.loc_key", alert?.locKey, 1024),
        ]
        for (field, arguments) in [
            ("alert.title_loc_args", alert?.titleLocArgs), ("alert.subtitle_loc_args", alert?.subtitleLocArgs),
            ("alert.loc_args", alert?.locArgs),
        ] {
            for argument in arguments ?? [] { texts.append((field, argument, 1024)) }
        }
        for (field, text, limit) in texts {
            if let text, text.storedLength > limit {
                throw .invalid("notification.\(field)", "notification.\(field) is at most \(limit) characters")
            }
        }
    }

    /// JSON with sorted keys, as stored with the push.
    static func json(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        return (try? String(decoding: encoder.encode(value), as: UTF8.self)) ?? "{}"
    }
}

extension JSONValue {
    /// A JSON value the Open API decoded as a free-form object.
    init(container: OpenAPIObjectContainer) {
        self = JSONValue(any: container.value)
    }

    init(any value: (any Sendable)?) {
        switch value {
        case nil: self = .null
        case let bool as Bool: self = .bool(bool)
        case let integer as Int: self = .integer(integer)
        case let integer as Int64: self = .integer(Int(integer))
        case let number as Double:
            self = number == number.rounded() && abs(number) < 1e15 ? .integer(Int(number)) : .number(number)
        case let text as String: self = .string(text)
        case let array as [(any Sendable)?]: self = .array(array.map { JSONValue(any: $0) })
        case let object as [String: (any Sendable)?]: self = .object(object.mapValues { JSONValue(any: $0) })
        case let container as OpenAPIObjectContainer: self = JSONValue(any: container.value)
        case let container as OpenAPIValueContainer: self = JSONValue(any: container.value)
        case let container as OpenAPIArrayContainer: self = .array(container.value.map { JSONValue(any: $0) })
        default: self = .string(String(describing: value!))
        }
    }
}
