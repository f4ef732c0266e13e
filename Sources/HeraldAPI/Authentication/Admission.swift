import Foundation
import HTTPTypes
import HeraldAPIContract
import HeraldAccess
import HeraldCore

/// Whether a caller may run an operation now: the one decision that the API's
/// ``AuthenticationMiddleware`` and the console's ``ConsoleBridge`` both make, so that both
/// answer a refusal with the same code, message and rate-limit headers.
///
/// The rules are pure (``authorize(_:permission:path:)`` and
/// ``verdict(_:of:whose:headers:)``); ``admit(_:to:path:source:)`` draws on the buckets
/// between them.
struct Admission: Sendable {
    /// The buckets of server and admin keys.
    let rateLimiter: RateLimiter
    /// The buckets of client keys: a storm of registrations cannot starve the app's back-end.
    let clientRateLimiter: RateLimiter
    /// The client keys' sub-buckets, one per app and source address: one source (a script with
    /// the public key) gets a slice of the app's client budget, never all of it.
    let clientSourceRateLimiter: RateLimiter
    /// Whether `HERALD_API_TRUSTED_PROXIES` names the proxies in front: the source address is then
    /// the client's own.
    let clientAddressesTrusted: Bool

    /// An admitted call.
    struct Admitted: Sendable {
        /// Who runs the operation (nil: an open operation, run without a caller).
        var principal: Principal?
        /// The app's rate-limit fields, for the answer.
        var headers: HTTPFields
    }

    /// Admits `presented` to `operationID` at `path` (taking one token of the app's bucket), or
    /// refuses.
    /// - Parameter source: the request's source address, when known.
    /// - Throws: ``APIError`` 401, 403 or 429 saying what to do instead.
    func admit(_ presented: Principal?, to operationID: String, path: Substring, source: String?)
        throws(APIError) -> Admitted
    {
        let permission = Permission.of(operationID: operationID)
        guard let key = try Self.authorize(presented, permission: permission, path: path) else {
            return Admitted(principal: permission == .open ? nil : presented, headers: [:])
        }
        // Per source only where the source is the client: named by a trusted proxy, or a public
        // address that reached herald-api itself. Behind an untrusted proxy every installation
        // would share the proxy's address (and the app's budget is the bound then).
        if key.kind == .client, let source, clientAddressesTrusted || NetworkAddress.isPublic(source) {
            _ = try Self.verdict(
                clientSourceRateLimiter.take(appID: key.appID, source: source), of: clientSourceRateLimiter,
                whose: "This app's client keys", per: "from one address")
        }
        let limiter = key.kind == .client ? clientRateLimiter : rateLimiter
        let headers = try Self.verdict(
            limiter.take(appID: key.appID), of: limiter,
            whose: key.kind == .client ? "This app's client keys" : "This app")
        return Admitted(principal: .app(key), headers: headers)
    }

    /// Whether `presented` may call an operation that demands `permission` at `path`.
    /// - Returns: the app key to charge to the app's budget; nil for an open operation or the
    ///   admin token (neither is rate-limited).
    /// - Throws: ``APIError`` 401 without a caller, 403 saying what the operation takes instead.
    static func authorize(_ presented: Principal?, permission: Permission, path: Substring) throws(APIError) -> AppKey?
    {
        if permission == .open { return nil }
        switch presented {
        case nil:
            throw APIError(
                .unauthorized, code: .missingKey,
                message:
                    "Send your key as \"Authorization: Bearer <key>\": a server key of your app, or the admin token (or the app's admin key) for /v1/apps."
            )
        case .admin:
            guard permission == .globalAdmin || permission == .appAdmin else {
                throw APIError(
                    .forbidden, code: .appKeyRequired,
                    message:
                        "The admin token manages apps; devices, pushes and statistics take a server key of the app.")
            }
            return nil
        case .app(let key):
            try check(key, against: permission, path: path)
            return key
        }
    }

    /// The rate-limit fields of `decision`, drawn from `limiter`.
    /// - Parameters:
    ///   - whose: whose budget it is, as the refusal names it ("This app").
    ///   - per: what the budget is per, after "a second" ("from one address").
    /// - Throws: ``APIError`` 429 with `Retry-After` when `decision` refuses.
    static func verdict(_ decision: RateLimiter.Decision, of limiter: RateLimiter, whose: String, per: String? = nil)
        throws(APIError) -> HTTPFields
    {
        var fields = HTTPFields()
        fields[.rateLimitLimit] = String(limiter.ratePerSecond)
        fields[.rateLimitRemaining] = String(decision.remaining)
        guard decision.allowed else {
            let scope = per.map { " \($0)" } ?? ""
            throw APIError.tooManyRequests(
                "\(whose) may make \(limiter.ratePerSecond) requests a second\(scope) (bursts of \(limiter.burst)); retry after \(decision.retryAfterSeconds) s.",
                code: .rateLimited, retryAfterSeconds: decision.retryAfterSeconds, headers: fields)
        }
        return fields
    }

    /// Whether the app key `key` may call an operation that demands `permission` at `path`.
    /// - Throws: ``APIError`` 403 saying what the operation takes instead.
    static func check(_ key: AppKey, against permission: Permission, path: Substring) throws(APIError) {
        switch (permission, key.kind) {
        case (.open, _):
            return
        case (.globalAdmin, _):
            throw APIError(
                .forbidden, code: .adminOnly,
                message: "Creating, listing and deleting apps take the admin token, not an app key.")
        case (.appAdmin, .admin):
            guard appID(inPath: path) == key.appID else {
                throw APIError(
                    .forbidden, code: .otherApp,
                    message: "An app's admin key manages that app only; use the admin key of the app in the path.")
            }
        case (.appAdmin, _):
            throw APIError(
                .forbidden, code: .adminOnly,
                message:
                    "Managing an app, its keys and credentials takes the app's admin key or the admin token, not a server or client key."
            )
        case (.server, .admin), (.serverOrClient, .admin):
            throw APIError(
                .forbidden, code: .serverKeyRequired,
                message: "An admin key manages its app; devices, pushes and statistics take a server key of the app.")
        case (.server, .client):
            throw APIError(
                .forbidden, code: .clientKeyNotAllowed,
                message:
                    "A client key may only register a device and read, change or delete the device whose token it presents (/v1/devices/by-token/{token}); use a server key of the app for this."
            )
        case (.server(let scope), .server), (.serverOrClient(let scope), .server):
            guard key.has(scope) else {
                throw APIError(
                    .forbidden, code: .scopeMissing,
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
