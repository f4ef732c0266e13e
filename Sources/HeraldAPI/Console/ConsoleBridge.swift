import Foundation
import HTTPTypes
import HeraldAPIContract
import HeraldAPNsVocabulary
import HeraldAccess
import HeraldConsole
import HeraldCore
import HeraldDomain
import HeraldStore
import Logging

/// The console's way into herald-api: sign-in through the same key look-up, failed-attempt
/// throttle and admin token as the API's authentication gate, and the Open API's operations run
/// through the same ``Admission`` (permission and rate limit, with the same refusals), request
/// timeout and error translation as a request to `/v1` would be.
struct ConsoleBridge: ConsoleGateway {
    let handler: APIHandler
    let adminToken: String?
    let authenticator: KeyAuthenticator
    let keys: APIKeyRepository
    let apps: AppRepository
    let throttle: FailedAuthenticationThrottle
    let admission: Admission
    let deadlines: RequestDeadlines
    let logger: Logger

    func signIn(secret: String, source: String) async throws(ConsoleError) -> ConsoleIdentity {
        if let adminToken, !adminToken.isEmpty, SecretHasher.matches(secret, adminToken) {
            return ConsoleIdentity(role: .admin, appName: nil, owner: .admin(digest: Self.digest(adminToken)))
        }
        let record = try await lookUp { [authenticator] in try await authenticator.authenticate(Substring(secret)) }
        guard let record else {
            // Only failures are throttled: a valid key signs in from any address (see
            // AuthenticationGate).
            if let seconds = throttle.recordFailure(source: source) {
                throw ConsoleError(
                    .tooManyRequests, code: .tooManyFailedAuthentications,
                    message: "Too many unknown keys were tried from your address; try again in \(seconds) s.")
            }
            throw ConsoleError(
                .unauthorized, code: .unknownKey,
                message: "Herald does not know this key, or it was revoked. Check it and try again.")
        }
        guard record.kind != .client else {
            throw ConsoleError(
                .forbidden, code: .clientKeyNotAllowed,
                message:
                    "This is a client key (it ships inside your app). Sign in with a server key of the app, or its admin key."
            )
        }
        return try await identity(record)
    }

    func identity(of owner: ConsoleSessionRepository.Owner) async throws(ConsoleError) -> ConsoleIdentity? {
        switch owner {
        case .admin(let digest):
            // The admin token changed or was turned off: its sessions end.
            guard let adminToken, !adminToken.isEmpty, Self.digest(adminToken) == digest else { return nil }
            return ConsoleIdentity(role: .admin, appName: nil, owner: owner)
        case .key(let id):
            let record = try await lookUp { [keys] in try await keys.liveKey(id: id) }
            guard let record else { return nil }
            return try await identity(record)
        }
    }

    func perform<Output: Sendable>(
        _ operationID: String, path: String, as identity: ConsoleIdentity, request: ConsoleRequestOrigin,
        _ call: @Sendable (any APIProtocol) async throws -> Output
    ) async throws(ConsoleError) -> Output {
        do {
            let presented: Principal =
                switch identity.role {
                case .admin: .admin
                case .appKey(let record): .app(AppKey(record))
                }
            // The console's requests come from the operator's browser: no client key signs in,
            // so the per-source bucket never applies (source: nil).
            let principal =
                try admission.admit(presented, to: operationID, path: Substring(path), source: nil).principal
                ?? presented
            let handler = handler
            return try await Principal.$current.withValue(principal) {
                try await RequestIdentity.$requestID.withValue(request.requestID) {
                    try await RequestIdentity.$sourceAddress.withValue(request.sourceAddress) {
                        try await RequestIdentity.$trace.withValue(.start()) {
                            if OperationTraits.of(operationID: operationID).contains(.outlivesRequestTimeout) {
                                return try await call(handler)
                            }
                            return try await withoutActuallyEscaping(call) { call in
                                try await deadlines.guarding { try await call(handler) }
                            }
                        }
                    }
                }
            }
        } catch {
            throw Self.consoleError(
                ErrorResponseMiddleware.apiError(for: error, operationID: operationID, logger: logger))
        }
    }

    private func identity(_ record: APIKeyRecord) async throws(ConsoleError) -> ConsoleIdentity {
        let app = try await lookUp { [apps] in try await apps.app(id: record.appID) }
        return ConsoleIdentity(role: .appKey(record), appName: app?.name, owner: .key(record.id))
    }

    /// A look-up of sign-in's own (a key, an app) within the request timeout, its failure in the
    /// API's words (a database that does not answer is a 503).
    private func lookUp<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws(ConsoleError) -> T {
        do {
            return try await deadlines.guarding(body)
        } catch {
            throw Self.consoleError(
                ErrorResponseMiddleware.apiError(for: error, operationID: "console", logger: logger))
        }
    }

    /// What a session remembers of the admin token: SHA-256 of its SHA-256.
    static func digest(_ adminToken: String) -> [UInt8] {
        SecretHasher.hash(Hexadecimal.encode(SecretHasher.hash(adminToken)))
    }

    static func consoleError(_ error: APIError) -> ConsoleError {
        ConsoleError(error.status, code: error.code, message: error.message, field: error.field)
    }
}

extension APIRequestContext: ConsoleRequestContext {}
