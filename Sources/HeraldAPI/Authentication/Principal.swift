import Foundation
import HeraldDomain
import HeraldStore

/// Who is calling: the global admin (the configured token) or an app, through one of its keys.
enum Principal: Sendable, Equatable {
    case admin
    case app(AppKey)

    /// The caller of the operation running in this task, set by ``AuthenticationMiddleware``.
    @TaskLocal static var current: Principal?
    /// Whom the request's bearer token names, resolved by ``AuthenticationGate`` before the body
    /// was read; nil without a token. ``AuthenticationMiddleware`` checks it against the operation.
    @TaskLocal static var presented: Principal?
}

/// An app's key, as a caller presents it.
struct AppKey: Sendable, Equatable {
    var appID: UUID
    var kind: APIKeyKind
    var keyID: UUID
    /// A server key's scopes; `nil`: all of them.
    var scopes: [APIKeyScope]?

    init(_ record: APIKeyRecord) {
        appID = record.appID
        kind = record.kind
        keyID = record.id
        scopes = record.scopes
    }

    func has(_ scope: APIKeyScope) -> Bool { scopes?.contains(scope) ?? true }
}

/// What an operation demands of its caller. Every operation's is in ``of(operationID:)``; the
/// expected answer of every operation to every kind of caller is in
/// Tests/Security/authorization-matrix.tsv, which the abuse suite checks against a live server.
enum Permission: Equatable {
    /// No key (health, readiness, metrics).
    case open
    /// The global admin token (creating and listing apps).
    case globalAdmin
    /// The global admin token, or the admin key of the app the path names.
    case appAdmin
    /// A server key of an app with `scope`.
    case server(APIKeyScope)
    /// A server key with `scope`, or a client key of the app (which the operation then holds to
    /// the client rules).
    case serverOrClient(APIKeyScope)

    /// The paths of the open operations: ``AuthenticationGate`` lets them through whatever
    /// token they carry (a probe or a Prometheus scrape sent with a stale key still answers).
    static let openPaths: Set<String> = ["/healthz", "/readyz", "/metrics"]

    /// The permission of each operation of Schemas/openapi.yaml, by operation id. An operation
    /// this does not name demands the global admin token: a new operation is closed until
    /// someone decides who may call it.
    static func of(operationID: String) -> Permission {
        switch operationID {
        case "getHealth", "getReadiness", "getMetrics": .open
        // Deleting an app takes everything it has: the admin token only, never a key of the app.
        case "createApp", "listApps", "deleteApp": .globalAdmin
        case "getApp", "updateApp", "listKeys", "createKey", "revokeKey", "rotateKey", "listCredentials",
            "putCredential", "deleteCredential", "rotateIdentitySecret", "listAuditEvents", "createWebhook",
            "listWebhooks", "deleteWebhook", "sendTestWebhook", "listWebhookAttempts", "updateWebhook",
            "rotateWebhookSecret", "listWebhookDeliveries", "replayWebhookDeliveries":
            .appAdmin
        case "registerDevice", "updateDeviceByToken", "deleteDeviceByToken", "updateDevice":
            .serverOrClient(.devicesWrite)
        case "getDeviceByToken": .serverOrClient(.devicesRead)
        // What a device did with a push: its SDK reports it (docs/engagement.md).
        case "reportEvents": .serverOrClient(.devicesWrite)
        case "importDevices", "deleteDevice": .server(.devicesWrite)
        case "listDevices", "getDevice": .server(.devicesRead)
        case "createPush", "validatePush", "cancelPush", "pickWinner", "pausePush", "resumePush", "recallPush",
            "createSegment",
            "updateSegment", "deleteSegment", "createTemplate", "updateTemplate", "deleteTemplate", "createSchedule",
            "updateSchedule", "deleteSchedule", "pauseSchedule", "resumeSchedule":
            .server(.pushesWrite)
        case "listSegments", "getSegment", "listTemplates", "getTemplate", "listSchedules", "getSchedule":
            .server(.pushesRead)
        case "listPushes", "getPush", "getPushReport", "streamPushEvents", "listPushFailures": .server(.pushesRead)
        case "getStatistics", "listTagStatistics": .server(.statsRead)
        default: .globalAdmin
        }
    }
}

/// What an operation is besides who may call it, by operation id: the table beside
/// ``Permission/of(operationID:)`` that the API's middleware and the console both read.
struct OperationTraits: OptionSet, Sendable {
    let rawValue: Int

    /// Runs past the request timeout (`HERALD_API_REQUEST_TIMEOUT`): a stream lasts as long as the
    /// caller listens; an import has bounds of its own (docs/limits.md).
    static let outlivesRequestTimeout = OperationTraits(rawValue: 1 << 0)

    static func of(operationID: String) -> OperationTraits {
        switch operationID {
        case "streamPushEvents", "importDevices": .outlivesRequestTimeout
        default: []
        }
    }
}

extension Principal {
    /// The calling app (the middleware admitted only app keys to app operations).
    static func requireApp() throws -> UUID {
        guard case .app(let key)? = current else {
            throw APIError(.forbidden, code: .appKeyRequired, message: "This takes a key of an app.")
        }
        return key.appID
    }

    /// The calling key, when an app's key calls.
    static var currentKey: AppKey? {
        guard case .app(let key)? = current else { return nil }
        return key
    }

    /// Whether a client key calls.
    static var isClient: Bool { currentKey?.kind == .client }

    /// Who calls and through which request, for the audit log.
    static var auditOrigin: AuditOrigin {
        AuditOrigin(
            actor: currentKey.map { .key($0.keyID) } ?? .admin, requestID: RequestIdentity.requestID,
            sourceAddress: RequestIdentity.sourceAddress)
    }
}
