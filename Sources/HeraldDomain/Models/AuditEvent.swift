import Foundation

/// Who did something the audit log records.
public enum AuditActor: Sendable, Equatable {
    /// The global admin token.
    case admin
    /// An app's key (server, client or admin), by id.
    case key(UUID)

    public var keyID: UUID? {
        if case .key(let id) = self { id } else { nil }
    }
}

/// Where a recorded action came from: who, and through which request.
public struct AuditOrigin: Sendable, Equatable {
    public var actor: AuditActor
    /// The request's `X-Request-Id`.
    public var requestID: String?
    /// The address the request came from (a load balancer's, behind one).
    public var sourceAddress: String?

    public init(actor: AuditActor, requestID: String? = nil, sourceAddress: String? = nil) {
        self.actor = actor
        self.requestID = requestID
        self.sourceAddress = sourceAddress
    }
}

/// One entry of the audit log.
public struct AuditEvent: Sendable, Equatable {
    public var id: Int64
    public var occurredAt: Date
    public var appID: UUID?
    public var origin: AuditOrigin
    /// What happened, for example `push.created`, `key.revoked`, `credential.stored`.
    public var action: String
    /// What it touched: a push id, a key id, an environment.
    public var target: String?
    /// Facts about the action that are not secret (a key's kind and scopes, a push's audience
    /// kind), as a JSON object.
    public var detailsJSON: String

    public init(
        id: Int64, occurredAt: Date, appID: UUID? = nil, origin: AuditOrigin, action: String, target: String? = nil,
        detailsJSON: String
    ) {
        self.id = id
        self.occurredAt = occurredAt
        self.appID = appID
        self.origin = origin
        self.action = action
        self.target = target
        self.detailsJSON = detailsJSON
    }
}

/// An entry for the audit log, handed to the repository method that makes the change it records
/// and appended in that change's transaction: the change and its entry are written together or
/// not at all, so no action goes unrecorded because the log could not be written.
public struct AuditEntry: Sendable, Equatable {
    /// What happened, for example `key.revoked`.
    public var action: String
    public var appID: UUID?
    /// What it touched: a push id, a key id, an environment.
    public var target: String?
    public var origin: AuditOrigin
    /// Facts about the action that are not secret.
    public var details: [String: String]

    public init(
        _ action: String, appID: UUID?, target: String? = nil, origin: AuditOrigin, details: [String: String] = [:]
    ) {
        self.action = action
        self.appID = appID
        self.target = target
        self.origin = origin
        self.details = details
    }
}
