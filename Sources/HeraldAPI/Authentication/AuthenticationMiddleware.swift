import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
import OpenAPIRuntime

/// Checks the caller that ``AuthenticationGate`` resolved (``Principal/presented``) against what
/// the operation demands (``Permission``), applies the app's rate limit (client keys draw on a
/// bucket of their own, so a storm of registrations cannot starve the app's back-end), and runs
/// the operation with ``Principal/current`` set.
struct AuthenticationMiddleware: ServerMiddleware {
    /// The buckets of server and admin keys.
    let rateLimiter: RateLimiter
    /// The buckets of client keys.
    let clientRateLimiter: RateLimiter
    /// The client keys' sub-buckets, one per app and source address: one source (a script with
    /// the public key) gets a slice of the app's client budget, never all of it.
    let clientSourceRateLimiter: RateLimiter
    /// Whether `HERALD_API_TRUSTED_PROXIES` names the proxies in front: the source address is then
    /// the client's own.
    let clientAddressesTrusted: Bool

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, metadata: ServerRequestMetadata, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, ServerRequestMetadata) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        let permission = Permission.of(operationID: operationID)
        if permission == .open { return try await next(request, body, metadata) }
        guard let principal = Principal.presented else {
            throw APIError(
                .unauthorized, code: "missing_key",
                message:
                    "Send your key as \"Authorization: Bearer <key>\": a server key of your app, or the admin token (or the app's admin key) for /v1/apps."
            )
        }
        let key: AppKey
        switch principal {
        case .admin:
            guard permission == .globalAdmin || permission == .appAdmin else {
                throw APIError(
                    .forbidden, code: "app_key_required",
                    message:
                        "The admin token manages apps; devices, pushes and statistics take a server key of the app.")
            }
            return try await Principal.$current.withValue(principal) { try await next(request, body, metadata) }
        case .app(let appKey):
            key = appKey
        }
        try Self.check(key, against: permission, path: Substring(request.path ?? ""))
        // Per source only where the source is the client: named by a trusted proxy, or a public
        // address that reached herald-api itself. Behind an untrusted proxy every installation
        // would share the proxy's address (and the app's budget is the bound then).
        if key.kind == .client, let source = RequestIdentity.sourceAddress,
            clientAddressesTrusted || NetworkAddress.isPublic(source)
        {
            let fromSource = clientSourceRateLimiter.take(appID: key.appID, source: source)
            guard fromSource.allowed else {
                var fields = HTTPFields()
                fields[.rateLimitLimit] = String(clientSourceRateLimiter.ratePerSecond)
                fields[.rateLimitRemaining] = "0"
                throw APIError.tooManyRequests(
                    "This app's client keys may make \(clientSourceRateLimiter.ratePerSecond) requests a second from one address (bursts of \(clientSourceRateLimiter.burst)); retry after \(fromSource.retryAfterSeconds) s.",
                    code: "rate_limited", retryAfterSeconds: fromSource.retryAfterSeconds, headers: fields)
            }
        }
        let limiter = key.kind == .client ? clientRateLimiter : rateLimiter
        let decision = limiter.take(appID: key.appID)
        var limitFields = HTTPFields()
        limitFields[.rateLimitLimit] = String(limiter.ratePerSecond)
        limitFields[.rateLimitRemaining] = String(decision.remaining)
        guard decision.allowed else {
            let whose = key.kind == .client ? "This app's client keys" : "This app"
            throw APIError.tooManyRequests(
                "\(whose) may make \(limiter.ratePerSecond) requests a second (bursts of \(limiter.burst)); retry after \(decision.retryAfterSeconds) s.",
                code: "rate_limited", retryAfterSeconds: decision.retryAfterSeconds, headers: limitFields)
        }
        var (response, responseBody) = try await Principal.$current.withValue(principal) {
            try await next(request, body, metadata)
        }
        for field in limitFields { response.headerFields[field.name] = field.value }
        return (response, responseBody)
    }

    /// Whether the app key `key` may call an operation that demands `permission` at `path`.
    /// - Throws: ``APIError`` 403 saying what the operation takes instead.
    static func check(_ key: AppKey, against permission: Permission, path: Substring) throws(APIError) {
        switch (permission, key.kind) {
        case (.open, _):
            return
        case (.globalAdmin, _):
            throw APIError(
                .forbidden, code: "admin_only",
                message: "Creating, listing and deleting apps take the admin token, not an app key.")
        case (.appAdmin, .admin):
            guard Self.appID(inPath: path) == key.appID else {
                throw APIError(
                    .forbidden, code: "other_app",
                    message: "An app's admin key manages that app only; use the admin key of the app in the path.")
            }
        case (.appAdmin, _):
            throw APIError(
                .forbidden, code: "admin_only",
                message:
                    "Managing an app, its keys and credentials takes the app's admin key or the admin token, not a server or client key."
            )
        case (.server, .admin), (.serverOrClient, .admin):
            throw APIError(
                .forbidden, code: "server_key_required",
                message: "An admin key manages its app; devices, pushes and statistics take a server key of the app.")
        case (.server, .client):
            throw APIError(
                .forbidden, code: "client_key_not_allowed",
                message:
                    "A client key may only register a device and read, change or delete the device whose token it presents (/v1/devices/by-token/{token}); use a server key of the app for this."
            )
        case (.server(let scope), .server), (.serverOrClient(let scope), .server):
            guard key.has(scope) else {
                throw APIError(
                    .forbidden, code: "scope_missing",
                    message:
                        "This server key does not have the scope \(scope.rawValue); use a key that has it (keys are created with their scopes)."
                )
            }
        case (.serverOrClient, .client):
            return
        }
    }

    /// The app id of a `/v1/apps/{appId}...` path.
    static func appID(inPath path: Substring) -> UUID? {
        let parts = path.split(separator: "?", maxSplits: 1).first?.split(separator: "/") ?? []
        guard parts.count >= 3, parts[0] == "v1", parts[1] == "apps" else { return nil }
        return UUID(uuidString: String(parts[2]))
    }
}
