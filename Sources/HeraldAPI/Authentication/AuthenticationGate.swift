import Foundation
import HTTPTypes
import HeraldAccess
import HeraldCore
import HeraldStore
import Hummingbird
import Logging
import NIOCore
import Synchronization

/// The first thing every request meets (but health, readiness and metrics, which are open): it
/// settles who is calling before anything of the body is read, so an unauthenticated caller costs
/// herald-api a header's worth of work.
///
/// - A bearer token is resolved (``Principal/presented``): the admin token is compared in
///   constant time; a token not shaped like a Herald key is refused without a query; a key is
///   looked up through ``KeyAuthenticator``'s caches. A token that fails answers 401 at once,
///   the body unread and the connection closed, and counts against its source address
///   (``FailedAuthenticationThrottle``): past the limit, the source's failures answer 429 for
///   the rest of its minute. Only failures are throttled: a valid key or admin token is always
///   looked up and served, from any source, so that nobody who shares an address with the
///   caller (a load balancer, a carrier NAT) can lock a key out by guessing.
/// - Without a token, at most ``preAuthenticationBodyBytes`` of body are read: no operation that
///   takes a body is open, so anything larger answers 401 `missing_key`.
///
/// The OpenAPI ``AuthenticationMiddleware`` then checks what the operation demands of the
/// principal.
struct AuthenticationGate<Context: ClientAddressRequestContext>: RouterMiddleware {
    /// The most body bytes read from a request that presents no key.
    static var preAuthenticationBodyBytes: Int { 4096 }

    let adminToken: String?
    let authenticator: KeyAuthenticator
    let throttle: FailedAuthenticationThrottle
    /// Key look-ups get the request timeout.
    let deadlines: RequestDeadlines
    let logger: Logger

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        if Permission.openPaths.contains(request.uri.path) { return try await next(request, context) }
        guard let token = Self.bearerToken(request.headers) else {
            var request = request
            do {
                let body = try await request.collectBody(upTo: Self.preAuthenticationBodyBytes)
                request = Request(head: request.head, body: .init(buffer: body))
            } catch {
                return refusal(
                    APIError(
                        .unauthorized, code: .missingKey,
                        message:
                            "Send your key as \"Authorization: Bearer <key>\" before a body: without one, at most \(Self.preAuthenticationBodyBytes) bytes are read."
                    ), to: request)
            }
            return try await next(request, context)
        }
        let source = context.sourceAddress
        let principal: Principal?
        do {
            principal = try await resolve(token)
        } catch {
            return refusal(
                ErrorResponseMiddleware.apiError(for: error, operationID: "authentication", logger: logger), to: request
            )
        }
        guard let principal else {
            if let seconds = throttle.recordFailure(source: source) {
                return refusal(
                    .tooManyRequests(
                        "\(throttle.limit) requests from \(source) presented a key Herald does not know within a minute; retry after \(seconds) s with a valid key.",
                        code: .tooManyFailedAuthentications, retryAfterSeconds: seconds), to: request)
            }
            return refusal(
                APIError(
                    .unauthorized, code: .unknownKey, message: "This key is not known to Herald, or it was revoked."),
                to: request)
        }
        return try await Principal.$presented.withValue(principal) {
            try await RequestIdentity.$sourceAddress.withValue(source) { try await next(request, context) }
        }
    }

    /// The admin or the app key `token` names, or nil for neither. A key is looked up within the
    /// request timeout, like any operation: a database that does not answer is a 503, not a wait.
    private func resolve(_ token: Substring) async throws -> Principal? {
        if let adminToken, !adminToken.isEmpty, SecretHasher.matches(token, adminToken) { return .admin }
        let key = try await deadlines.guarding { [authenticator] in try await authenticator.authenticate(token) }
        return key.map { .app(AppKey($0)) }
    }

    /// The token of an `Authorization: Bearer` header, if there is one: the scheme in any case,
    /// the token without the spaces and tabs around it. Read on every request, byte by byte
    /// (Foundation's `trimmingCharacters(in:)` was 1.2% of herald-api's CPU in `make bench-api`).
    static func bearerToken(_ headers: HTTPFields) -> Substring? {
        guard let header = headers[.authorization] else { return nil }
        var bytes = header.utf8[...]
        for expected in "bearer ".utf8 {
            guard let byte = bytes.popFirst() else { return nil }
            let lowered = (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 : byte
            guard lowered == expected else { return nil }
        }
        let isBlank = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        while let first = bytes.first, isBlank(first) { bytes.removeFirst() }
        while let last = bytes.last, isBlank(last) { bytes.removeLast() }
        return bytes.isEmpty ? nil : Substring(bytes)
    }

    /// An answer to a request whose body is left unread: when it has one, the connection is
    /// closed after the answer, so the rest of that body is never read either.
    func refusal(_ error: APIError, to request: Request) -> Response {
        var response = RouteErrorMiddleware<Context>.response(error)
        let hasBody =
            request.headers[.transferEncoding] != nil
            || (request.headers[.contentLength].flatMap { Int($0) } ?? 0) > 0
        if hasBody { response.headers[.connection] = "close" }
        return response
    }
}

/// A request context that knows the address its request is counted under: the peer's, or the
/// client's behind a trusted proxy (``ClientAddressMiddleware``).
protocol ClientAddressRequestContext: RemoteAddressRequestContext {
    /// The client's address behind a trusted proxy, set by ``ClientAddressMiddleware`` (nil:
    /// the peer is the client).
    var clientAddress: String? { get set }
    /// The address failed authentications, sign-ins and the audit log count this request under.
    var sourceAddress: String { get }
}

/// Herald's request context: Hummingbird's, plus the caller's address (for
/// ``FailedAuthenticationThrottle`` and the audit log).
public struct APIRequestContext: ClientAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?
    public var clientAddress: String?
    public var sourceAddress: String { clientAddress ?? remoteAddress?.ipAddress ?? "unknown" }

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }
}

/// When the peer is a trusted proxy (`HERALD_API_TRUSTED_PROXIES`), sets the client it names in
/// `X-Forwarded-For` (``TrustedProxies``) before anything reads the request's address. Added to
/// the router only when some proxy is trusted.
struct ClientAddressMiddleware<Context: ClientAddressRequestContext>: RouterMiddleware {
    let proxies: TrustedProxies

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        var context = context
        context.clientAddress = proxies.clientAddress(
            peer: context.remoteAddress?.ipAddress,
            forwardedFor: request.headers[values: forwardedForField].map { Substring($0) })
        return try await next(request, context)
    }
}

private let forwardedForField = HTTPField.Name("X-Forwarded-For")!
