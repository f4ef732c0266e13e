import Foundation
import HeraldAPIContract
import HeraldAPNs
import HeraldStore

// How Herald's stored things are shown through the Open API.

extension Components.Schemas.App {
    init(_ app: App) {
        self.init(
            id: app.id.lowercased, name: app.name, bundleId: app.bundleID, createdAt: app.createdAt,
            updatedAt: app.updatedAt, identityVerification: app.clientRules.identityVerification,
            legacyClientAccess: app.clientRules.legacyAccess, clientTags: app.clientRules.allowedTags)
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
    init(_ event: HeraldStore.AuditEvent) {
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
            targeted: counters.targeted, accepted: counters.accepted, rejected: counters.rejected,
            expired: counters.expired, canceled: counters.canceled, tokensInvalidated: counters.tokensInvalidated,
            rejectedByReason: .init(additionalProperties: counters.rejectedByReason))
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
            createdByKeyId: push.createdByKey?.lowercased, createdAt: push.createdAt,
            scheduledAt: definition.scheduledAt, expiresAt: definition.expiresAt,
            fanoutStartedAt: progress.fanoutStartedAt,
            fanoutFinishedAt: progress.fanoutFinishedAt, completedAt: push.completedAt, canceledAt: push.canceledAt,
            eta: running ? progress.etaAt : nil)
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
