import Foundation
import HeraldAPNsVocabulary
import HeraldCore
import HeraldDomain

/// How an APNs credential's secret is kept: sealed by `CredentialCipher`, with the credential's
/// app, row id, environment and kind and the sealing master key's id as authenticated data, so
/// sealed bytes copied to another row or relabelled (another environment, another kind) cannot be
/// opened. The secret is the `.p8` key's PEM text for token credentials, and the PEM certificate
/// chain followed by its PEM private key for certificate credentials.
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
        var record = APNsCredentialRecord(
            id: id, appID: appID, environment: environment, kind: kind, keyID: keyID, teamID: teamID,
            sealedSecret: [], sealingKeyID: nil, certificateExpiresAt: certificateExpiresAt)
        try record.seal(Array(secret.utf8), with: cipher)
        return record
    }

    /// Seals `secret` into this record with the cipher's sealing key.
    public mutating func seal(_ secret: [UInt8], with cipher: CredentialCipher) throws {
        let record = self
        (sealedSecret, sealingKeyID) = try cipher.seal(secret) { record.associatedData(sealingKeyID: $0) }
    }

    /// The secret, opened.
    /// - Throws: `CredentialCipher.CannotOpen`: sealed with a master key the cipher does not hold,
    ///   or bytes from another row, or a row relabelled.
    public func openSecret(with cipher: CredentialCipher) throws(CredentialCipher.CannotOpen) -> [UInt8] {
        guard let sealingKeyID else {
            // Sealed before secrets carried their key's id: bound to the app and row only.
            return try cipher.openWithAnyKey(sealedSecret, associatedData: Array("\(appID)/\(id)".utf8))
        }
        return try cipher.open(
            sealedSecret, keyID: sealingKeyID, associatedData: associatedData(sealingKeyID: sealingKeyID))
    }

    func associatedData(sealingKeyID: String) -> [UInt8] {
        Array(
            "herald-apns-credential/v2 app=\(appID) credential=\(id) environment=\(environment.rawValue) kind=\(kind.rawValue) sealing-key=\(sealingKeyID)"
                .utf8)
    }
}
