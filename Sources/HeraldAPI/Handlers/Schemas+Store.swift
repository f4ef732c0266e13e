import Foundation
import HeraldAPIContract
import HeraldAPNsVocabulary
import HeraldDomain
import HeraldStore

// How Herald's stored things are shown through the Open API.

extension Components.Schemas.App {
    init(_ app: App) {
        self.init(
            id: app.id.lowercased, name: app.name, bundleId: app.bundleID, createdAt: app.createdAt,
            updatedAt: app.updatedAt, identityVerification: app.clientRules.identityVerification,
            legacyClientAccess: app.clientRules.legacyAccess,
            aliasSignaturesV1: app.clientRules.aliasSignaturesV1, clientTags: app.clientRules.allowedTags,
            clientAttributes: app.clientRules.allowedAttributes,
            deliveryPolicy: app.deliveryPolicy.map(Components.Schemas.DeliveryPolicy.init))
    }
}

extension Components.Schemas.DeliveryPolicy {
    init(_ policy: DeliveryPolicy) {
        func time(_ minute: Int) -> String { String(format: "%02d:%02d", minute / 60, minute % 60) }
        self.init(
            quietHours: policy.quietHours.map { .init(start: time($0.startMinute), end: time($0.endMinute)) },
            defaultTimeZone: policy.defaultTimeZone,
            frequencyCap: policy.frequencyCap.map {
                .init(maxPushes: $0.maxPushes, windowHours: $0.windowSeconds / 3600)
            }
        )
    }
}

extension DeliveryPolicy {
    /// The policy a request describes, checked: times as HH:MM, a window that is not empty, a
    /// time zone the server knows, a cap within the limits.
    init(_ request: Components.Schemas.DeliveryPolicy) throws(APIError) {
        func minute(_ text: String, _ field: String) throws(APIError) -> Int {
            let parts = text.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 2, parts.allSatisfy({ $0.count == 2 }), let hours = Int(parts[0]),
                let minutes = Int(parts[1]), (0..<24).contains(hours), (0..<60).contains(minutes)
            else {
                throw .invalid(field, "a local time is HH:MM, 00:00 to 23:59 (\(text) is not)")
            }
            return hours * 60 + minutes
        }
        var quietHours: QuietHours?
        if let quiet = request.quietHours {
            let start = try minute(quiet.start, "delivery_policy.quiet_hours.start")
            let end = try minute(quiet.end, "delivery_policy.quiet_hours.end")
            guard start != end else {
                throw .invalid("delivery_policy.quiet_hours.end", "quiet hours start and end at different times")
            }
            quietHours = QuietHours(startMinute: start, endMinute: end)
        }
        if let zone = request.defaultTimeZone, TimeZone(identifier: zone) == nil {
            throw .invalid(
                "delivery_policy.default_time_zone", "\(zone) is not an IANA time zone name (e.g. Europe/Berlin)")
        }
        var cap: FrequencyCap?
        if let requested = request.frequencyCap {
            guard (1...DeliveryPolicy.maximumCapPushes).contains(requested.maxPushes) else {
                throw .invalid(
                    "delivery_policy.frequency_cap.max_pushes",
                    "a cap is 1 to \(DeliveryPolicy.maximumCapPushes) pushes")
            }
            let seconds = requested.windowHours * 3600
            guard DeliveryPolicy.capWindowSeconds.contains(seconds) else {
                throw .invalid(
                    "delivery_policy.frequency_cap.window_hours", "a cap's window is 1 to 168 hours (7 days)")
            }
            cap = FrequencyCap(maxPushes: requested.maxPushes, windowSeconds: seconds)
        }
        self.init(quietHours: quietHours, defaultTimeZone: request.defaultTimeZone, frequencyCap: cap)
    }
}

extension Components.Schemas.Key {
    init(_ key: APIKeyRecord) {
        self.init(
            id: key.id.lowercased, kind: .init(key.kind), prefix: key.keyPrefix, name: key.name,
            createdAt: key.createdAt,
            lastUsedAt: key.lastUsedAt, revokedAt: key.revokedAt,
            scopes: key.scopes?.map(Components.Schemas.KeyScope.init))
    }
}

// The contract's enums and the store's share their raw values.

extension Components.Schemas.KeyScope {
    init(_ scope: APIKeyScope) {
        self.init(rawValue: scope.rawValue)!
    }
}

extension Components.Schemas.AuditEvent {
    init(_ event: HeraldDomain.AuditEvent) {
        let details =
            (try? JSONDecoder().decode([String: String].self, from: Data(event.detailsJSON.utf8))) ?? [:]
        let actor: Components.Schemas.AuditEvent.ActorPayload =
            switch event.origin.actor {
            case .admin: .admin
            case .key: .key
            }
        self.init(
            id: event.id, occurredAt: event.occurredAt, appId: event.appID?.lowercased, actor: actor,
            keyId: event.origin.actor.keyID?.lowercased, action: event.action, target: event.target,
            requestId: event.origin.requestID, sourceAddress: event.origin.sourceAddress,
            details: .init(additionalProperties: details))
    }
}

extension Components.Schemas.KeyKind {
    init(_ kind: APIKeyKind) {
        self.init(rawValue: kind.rawValue)!
    }
}

extension Components.Schemas.KeyCreated {
    init(_ key: APIKeyRecord, secret: String) {
        self.init(
            id: key.id.lowercased, kind: .init(key.kind), key: secret, prefix: key.keyPrefix, createdAt: key.createdAt,
            scopes: key.scopes?.map(Components.Schemas.KeyScope.init))
    }
}

extension Components.Schemas.Credential {
    init(_ credential: APNsCredentialRecord) {
        self.init(
            environment: .init(credential.environment), kind: .init(rawValue: credential.kind.rawValue)!,
            keyId: credential.keyID, teamId: credential.teamID, certificateExpiresAt: credential.certificateExpiresAt,
            updatedAt: credential.updatedAt)
    }
}

extension Components.Schemas.Environment {
    init(_ environment: APNsEnvironment) {
        self.init(rawValue: environment.rawValue)!
    }

    var store: APNsEnvironment { APNsEnvironment(rawValue: rawValue)! }
}

extension Components.Schemas.Device {
    init(_ device: Device) {
        let prefix = Hexadecimal.encode(device.token.prefix(4))
        self.init(
            registrationId: device.id, environment: .init(device.environment), topic: device.topic, tokenPrefix: prefix,
            alias: device.alias, tags: device.tags, locale: device.locale, timeZone: device.timeZone,
            status: .init(rawValue: device.status.rawValue)!, invalidReason: device.invalidReason,
            registeredAt: device.registeredAt, updatedAt: device.updatedAt, invalidatedAt: device.invalidatedAt)
        country = device.country
        appVersion = device.appVersion
        osVersion = device.osVersion
        firstRegisteredAt = device.firstRegisteredAt
        authorizationStatus = device.authorizationStatus.flatMap { .init(rawValue: $0.rawValue) }
        if !device.attributes.isEmpty {
            attributes = try? JSONValue.object(device.attributes).decoded(as: AttributesPayload.self)
        }
    }
}

extension Components.Schemas.PushState {
    init(_ state: PushState) {
        self.init(rawValue: state.rawValue)!
    }

    var store: PushState { PushState(rawValue: rawValue)! }
}

extension Components.Schemas.Counters {
    init(_ counters: PushCounters) {
        self.init(
            targeted: counters.targeted, accepted: counters.accepted, deliveredOnline: counters.deliveredOnline,
            rejected: counters.rejected,
            expired: counters.expired, canceled: counters.canceled, skipped: counters.skipped,
            tokensInvalidated: counters.tokensInvalidated,
            rejectedByReason: .init(additionalProperties: counters.rejectedByReason),
            skippedByReason: .init(additionalProperties: counters.skippedByReason))
    }
}

extension Components.Schemas.DeviceCounts {
    init(_ counts: DeviceGroupCounts) {
        self.init(
            active: counts.active, invalid: counts.invalid,
            byEnvironment: .init(additionalProperties: counts.activeByEnvironment))
    }
}

extension Components.Schemas.PushStatus {
    init(_ progress: PushProgress) {
        let push = progress.push
        let definition = push.definition
        let running = push.state == .fanningOut || push.state == .accepted || push.state == .scheduled
        self.init(
            id: push.id.lowercased, state: .init(push.state), pushType: definition.pushType,
            priority: definition.priority, priorityClass: .init(definition.priorityClass),
            collapseId: definition.collapseID, paused: progress.paused, audienceSize: progress.audienceSize,
            counters: .init(progress.counters), recallOf: definition.recallOf?.lowercased,
            scheduleId: push.scheduleID?.lowercased, occurrenceAt: push.occurrenceAt,
            createdByKeyId: push.createdByKey?.lowercased, createdAt: push.createdAt,
            scheduledAt: definition.scheduledAt, expiresAt: definition.expiresAt,
            fanoutStartedAt: progress.fanoutStartedAt,
            fanoutFinishedAt: progress.fanoutFinishedAt, completedAt: push.completedAt, canceledAt: push.canceledAt,
            eta: running ? progress.etaAt : nil,
            localTime: definition.timing?.localTime.map {
                .init(time: $0.description, date: definition.timing?.localDate?.description)
            },
            quietHours: definition.timing?.quietHours.map { $0 == .hold ? .hold : .skip },
            waves: progress.waves.isEmpty ? nil : progress.waves.map(Components.Schemas.PushWave.init))
        if let split = definition.split {
            // An A/B test: the holdout and, in winner mode, the sample, the phase and the winner
            // (the variants' counters are read for the one push's status only).
            holdout = split.holdout
            sample = split.sample
            winner = split.winner.flatMap { split.variants.indices.contains($0) ? split.variants[$0].name : nil }
            if split.picksWinner, push.state != .canceled {
                abPhase =
                    split.secondPhaseFrom != nil
                    ? .rest : push.wave == 1 && push.state == .scheduled ? .waiting : .sample
            }
        }
    }
}

extension Components.Schemas.PushWave {
    init(_ wave: PushWave) {
        self.init(
            sendAt: wave.dueAt, timeZones: wave.timeZones, devices: wave.devices, started: wave.firstSequence != nil)
    }
}

extension Components.Schemas.PushAccepted {
    init(_ push: Push) {
        self.init(
            id: push.id.lowercased, state: .init(push.state), createdAt: push.createdAt,
            scheduledAt: push.definition.scheduledAt, payloadBytes: push.definition.payload.count)
    }
}

extension UUID {
    /// The lower-case form the API shows.
    var lowercased: String { uuidString.lowercased() }
}

extension Components.Schemas.PriorityClass {
    init(_ priorityClass: PushPriorityClass) {
        switch priorityClass {
        case .transactional: self = .transactional
        case .campaign: self = .campaign
        }
    }
}
