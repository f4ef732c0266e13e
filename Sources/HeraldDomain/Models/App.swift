import Foundation
import HeraldAPNsVocabulary

/// An app: one iOS app (bundle id) and everything registered for it.
public struct App: Sendable, Equatable {
    public var id: UUID
    public var name: String
    public var bundleID: String
    public var createdAt: Date
    public var updatedAt: Date
    /// The rules for the app's client keys.
    public var clientRules: ClientKeyRules
    /// Quiet hours and a frequency cap for its campaigns; nil: none.
    public var deliveryPolicy: DeliveryPolicy? = nil

    public init(
        id: UUID, name: String, bundleID: String, createdAt: Date, updatedAt: Date, clientRules: ClientKeyRules,
        deliveryPolicy: DeliveryPolicy? = nil
    ) {
        self.id = id
        self.name = name
        self.bundleID = bundleID
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.clientRules = clientRules
        self.deliveryPolicy = deliveryPolicy
    }
}

/// What an app's client keys (the keys its SDK embeds, so anyone may extract them) may do
/// beyond registering a token and changing the device whose token they present.
public struct ClientKeyRules: Sendable, Equatable {
    /// A client key binds an alias only with the app back-end's HMAC of it under the app's
    /// identity secret. On for new apps.
    public var identityVerification: Bool
    /// Client keys may also see registration ids and change or delete devices by them, as
    /// before Herald had these rules. Off for new apps; on for apps that existed before, until an
    /// operator switches it off (docs/security.md).
    public var legacyAccess: Bool
    /// The tags a client key may add or remove; `nil`: any tag. None for new apps.
    public var allowedTags: [String]?
    /// The attributes a client key may set or remove; `nil`: any attribute. None for new apps.
    public var allowedAttributes: [String]?
    /// The old form of alias signature (of the alias alone, valid for ever) is taken besides the
    /// v2 form (bound to the device's token and an expiry). Off for new apps; on for apps that
    /// existed before v2, until their admin switches it off.
    public var aliasSignaturesV1: Bool

    public init(
        identityVerification: Bool = true, legacyAccess: Bool = false, allowedTags: [String]? = [],
        allowedAttributes: [String]? = [], aliasSignaturesV1: Bool = false
    ) {
        self.allowedAttributes = allowedAttributes
        self.identityVerification = identityVerification
        self.legacyAccess = legacyAccess
        self.allowedTags = allowedTags
        self.aliasSignaturesV1 = aliasSignaturesV1
    }
}
