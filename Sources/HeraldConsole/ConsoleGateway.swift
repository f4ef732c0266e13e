import Foundation
import HTTPTypes
import HeraldAPIContract
import HeraldDomain
import HeraldStore

/// What the console needs of herald-api: who a key is, and the Open API's own operations, run
/// as the signed-in key would run them through the API (same permission checks, rate limit,
/// request timeout, audit origin). The console has no other way to the store for anything the
/// API does.
public protocol ConsoleGateway: Sendable {
    /// Who signs in with `secret` (a server or admin key of an app, or the admin token).
    /// - Parameter source: the browser's address; failed attempts count against it as failed
    ///   API authentications do.
    /// - Throws: ``ConsoleError`` 401 for a secret Herald does not know, 403 for a client key,
    ///   429 for a source past the failed-authentication limit, 503 for a database that does not
    ///   answer.
    func signIn(secret: String, source: String) async throws(ConsoleError) -> ConsoleIdentity

    /// Who owns a session now: nil when its key was revoked or the admin token changed.
    func identity(of owner: ConsoleSessionRepository.Owner) async throws(ConsoleError) -> ConsoleIdentity?

    /// Runs the Open API operation `operationID` as `identity`.
    /// - Parameters:
    ///   - path: the operation's path in the Open API (an app admin operation's app is read from it).
    ///   - call: calls the operation on the API's handler.
    /// - Throws: ``ConsoleError`` with the status, code and message the API would answer.
    func perform<Output: Sendable>(
        _ operationID: String, path: String, as identity: ConsoleIdentity, request: ConsoleRequestOrigin,
        _ call: @Sendable (any APIProtocol) async throws -> Output
    ) async throws(ConsoleError) -> Output
}

/// Who is signed in.
public struct ConsoleIdentity: Sendable, Equatable {
    public enum Role: Sendable, Equatable {
        /// The global admin token: apps, keys and credentials.
        case admin
        /// An app's server key (campaign work for that app) or admin key (that app's settings).
        case appKey(APIKeyRecord)
    }

    public var role: Role
    /// The app's name, for the header (nil for the admin).
    public var appName: String?
    /// How the session remembers it.
    public var owner: ConsoleSessionRepository.Owner

    public init(role: Role, appName: String?, owner: ConsoleSessionRepository.Owner) {
        self.role = role
        self.appName = appName
        self.owner = owner
    }

    /// The key, when an app's key is signed in.
    public var key: APIKeyRecord? {
        guard case .appKey(let key) = role else { return nil }
        return key
    }

    /// Whether the identity works on pushes (an app's server key).
    public var sendsPushes: Bool { key?.kind == .server }

    /// Whether the identity manages apps: the admin token (all of them) or an app's admin key (its
    /// own).
    public var managesApps: Bool { role == .admin || key?.kind == .admin }

    /// Whether the identity manages the app `appID`: the admin token, or that app's admin key.
    public func manages(appID: String) -> Bool {
        role == .admin || (key?.kind == .admin && key?.appID.uuidString.lowercased() == appID.lowercased())
    }
}

/// The request the console serves, for the operations' logs and audit log.
public struct ConsoleRequestOrigin: Sendable {
    public var requestID: String
    public var sourceAddress: String

    public init(requestID: String, sourceAddress: String) {
        self.requestID = requestID
        self.sourceAddress = sourceAddress
    }
}

/// An operation's refusal, as the Open API would answer it.
public struct ConsoleError: Error, Sendable, CustomStringConvertible {
    public var status: HTTPResponse.Status
    public var code: APIErrorCode
    public var message: String
    /// The request field at fault (`notification.alert.title`), when there is one.
    public var field: String?

    public init(_ status: HTTPResponse.Status, code: APIErrorCode, message: String, field: String? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.field = field
    }

    public var description: String { "\(status.code) \(code.rawValue): \(message)" }
}
