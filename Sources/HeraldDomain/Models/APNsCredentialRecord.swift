import Foundation
import HeraldAPNsVocabulary

/// How Herald authenticates to APNs for an app.
public enum APNsCredentialKind: String, Sendable, Codable {
    /// An ES256 signing key (.p8) with key id and team id.
    case token
    /// A client certificate (PKCS#12 or PEM) for mutual TLS.
    case certificate
}

/// An APNs credential; the secret is sealed (see `CredentialCipher`).
public struct APNsCredentialRecord: Sendable, Equatable {
    public var id: UUID
    public var appID: UUID
    public var environment: APNsEnvironment
    public var kind: APNsCredentialKind
    public var keyID: String?
    public var teamID: String?
    public var sealedSecret: [UInt8]
    /// The id of the master key that sealed the secret (`CredentialCipher.keyID(ofMasterKey:)`);
    /// nil for a secret sealed before secrets carried one.
    public var sealingKeyID: String?
    public var certificateExpiresAt: Date?
    public var updatedAt: Date

    public init(
        id: UUID, appID: UUID, environment: APNsEnvironment, kind: APNsCredentialKind, keyID: String?,
        teamID: String?, sealedSecret: [UInt8], sealingKeyID: String?, certificateExpiresAt: Date? = nil,
        updatedAt: Date = Date()
    ) {
        self.sealingKeyID = sealingKeyID
        self.id = id
        self.appID = appID
        self.environment = environment
        self.kind = kind
        self.keyID = keyID
        self.teamID = teamID
        self.sealedSecret = sealedSecret
        self.certificateExpiresAt = certificateExpiresAt
        self.updatedAt = updatedAt
    }
}
