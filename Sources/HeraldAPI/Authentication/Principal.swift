import Foundation
import HeraldStore

/// Who is calling: the admin (the configured token) or an app, through one of its keys.
enum Principal: Sendable, Equatable {
    case admin
    case app(appID: UUID, key: APIKeyKind, keyID: UUID)

    /// The caller of the operation running in this task, set by ``AuthenticationMiddleware``.
    @TaskLocal static var current: Principal?
    /// Whom the request's bearer token names, resolved by ``AuthenticationGate`` before the body
    /// was read; nil without a token. ``AuthenticationMiddleware`` checks it against the operation.
    @TaskLocal static var presented: Principal?
}

/// What an operation demands of its caller.
enum Permission {
    /// No key (health, readiness, metrics).
    case open
    /// The admin token.
    case admin
    /// A server key of an app.
    case server
    /// A server or client key of an app.
    case serverOrClient

    /// The paths of the open operations: ``AuthenticationGate`` lets them through whatever
    /// token they carry (a probe or a Prometheus scrape sent with a stale key still answers).
    static let openPaths: Set<String> = ["/healthz", "/readyz", "/metrics"]

    /// The permission of each operation of Schemas/openapi.yaml, by operation id.
    static func of(operationID: String) -> Permission {
        switch operationID {
        case "getHealth", "getReadiness", "getMetrics": .open
        case "createApp", "listApps", "getApp", "updateApp", "deleteApp", "listKeys", "createKey", "revokeKey",
            "rotateKey", "listCredentials", "putCredential", "deleteCredential":
            .admin
        case "registerDevice", "updateDevice": .serverOrClient
        default: .server
        }
    }
}
