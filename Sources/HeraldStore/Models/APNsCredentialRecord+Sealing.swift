import Foundation
import HeraldAPNs
import HeraldCore

/// How an APNs credential's secret is kept: sealed by `CredentialCipher` to the owner
/// `"<app id>/<credential id>"`, so sealed bytes copied to another row cannot be opened. The
/// secret is the `.p8` key's PEM text for token credentials, and the PEM certificate chain
/// followed by its PEM private key for certificate credentials.
extension APNsCredentialRecord {
    /// A token credential with its `.p8` key sealed.
    public static func token(
        appID: UUID, environment: APNsEnvironment, keyID: String, teamID: String, privateKeyPEM: String,
        cipher: CredentialCipher, id: UUID = UUID()
    ) throws -> APNsCredentialRecord {
        try sealing(
            privateKeyPEM, appID: appID, environment: environment, kind: .token, keyID: keyID, teamID: teamID,
            cipher: cipher, id: id)
    }

    /// A credential of either kind with `secret` (see above for what it holds) sealed.
    public static func sealing(
        _ secret: String, appID: UUID, environment: APNsEnvironment, kind: APNsCredentialKind, keyID: String?,
        teamID: String?, certificateExpiresAt: Date? = nil, cipher: CredentialCipher, id: UUID = UUID()
    ) throws -> APNsCredentialRecord {
        APNsCredentialRecord(
            id: id, appID: appID, environment: environment, kind: kind, keyID: keyID, teamID: teamID,
            sealedSecret: try cipher.seal(Array(secret.utf8), owner: sealingOwner(appID: appID, credentialID: id)),
            certificateExpiresAt: certificateExpiresAt)
    }

    /// The secret, opened.
    /// - Throws: `CredentialCipher.CannotOpen` with another master key or bytes from another row.
    public func openSecret(with cipher: CredentialCipher) throws -> [UInt8] {
        try cipher.open(sealedSecret, owner: Self.sealingOwner(appID: appID, credentialID: id))
    }

    static func sealingOwner(appID: UUID, credentialID: UUID) -> String { "\(appID)/\(credentialID)" }
}
