import Foundation
import HTTPTypes
import HeraldStore
import OpenAPIRuntime

/// Checks the caller that ``AuthenticationGate`` resolved (``Principal/presented``) against what
/// the operation demands (``Permission``), applies the app's rate limit, and runs the operation
/// with ``Principal/current`` set.
struct AuthenticationMiddleware: ServerMiddleware {
    let rateLimiter: RateLimiter

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
                    "Send your key as \"Authorization: Bearer <key>\": a server key of your app, or the admin token for /v1/apps."
            )
        }
        switch (permission, principal) {
        case (.admin, .admin):
            return try await Principal.$current.withValue(principal) { try await next(request, body, metadata) }
        case (.admin, .app):
            throw APIError(
                .forbidden, code: "admin_only",
                message: "Managing apps, keys and credentials takes the admin token, not an app key.")
        case (_, .admin):
            throw APIError(
                .forbidden, code: "app_key_required",
                message: "The admin token manages apps; devices, pushes and statistics take a server key of the app.")
        case (.server, .app(_, .client, _)):
            throw APIError(
                .forbidden, code: "client_key_not_allowed",
                message: "A client key may only register and update devices; use a server key of the app for this.")
        case (_, .app(let appID, _, _)):
            let decision = rateLimiter.take(appID: appID)
            var limitFields = HTTPFields()
            limitFields[.rateLimitLimit] = String(rateLimiter.ratePerSecond)
            limitFields[.rateLimitRemaining] = String(decision.remaining)
            guard decision.allowed else {
                throw APIError.tooManyRequests(
                    "This app may make \(rateLimiter.ratePerSecond) requests a second (bursts of \(rateLimiter.burst)); retry after \(decision.retryAfterSeconds) s.",
                    code: "rate_limited", retryAfterSeconds: decision.retryAfterSeconds, headers: limitFields)
            }
            var (response, responseBody) = try await Principal.$current.withValue(principal) {
                try await next(request, body, metadata)
            }
            for field in limitFields { response.headerFields[field.name] = field.value }
            return (response, responseBody)
        }
    }
}

extension Principal {
    /// The calling app (the middleware admitted only app keys to app operations).
    static func requireApp() throws -> UUID {
        guard case .app(let appID, _, _)? = current else {
            throw APIError(.forbidden, code: "app_key_required", message: "This takes a key of an app.")
        }
        return appID
    }
}
