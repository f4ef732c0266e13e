import Crypto
import Foundation
import HeraldAPIContract
import HeraldDomain
import HeraldStore
import NIOSSL
import X509

/// Checks an APNs credential before it is sealed and stored: a token key must be a P-256 key
/// (the `.p8` file Apple gives), a certificate must come with its private key. The stored
/// secret is the `.p8` PEM text, or the PEM certificate chain followed by the PEM private key
/// (what herald-sender opens).
enum CredentialValidator {
    struct Checked {
        var kind: APNsCredentialKind
        var keyID: String?
        var teamID: String?
        var secret: String
        var certificateExpiresAt: Date?
    }

    static func check(_ input: Components.Schemas.CredentialInput) throws(APIError) -> Checked {
        switch input.kind {
        case .token:
            guard let keyID = input.keyId, isIdentifier(keyID) else {
                throw .invalid("key_id", "key_id is the 10-character Key ID Apple shows next to the .p8 key")
            }
            guard let teamID = input.teamId, isIdentifier(teamID) else {
                throw .invalid("team_id", "team_id is your 10-character Apple Developer Team ID")
            }
            guard let pem = input.privateKey, (try? P256.Signing.PrivateKey(pemRepresentation: pem)) != nil else {
                throw .invalid(
                    "private_key",
                    "private_key must be the PEM text of the .p8 file (a P-256 key, \"-----BEGIN PRIVATE KEY-----\" ...)"
                )
            }
            return Checked(kind: .token, keyID: keyID, teamID: teamID, secret: pem, certificateExpiresAt: nil)
        case .certificate:
            if let encoded = input.pkcs12Base64 {
                return try pkcs12(encoded, passphrase: input.passphrase ?? "")
            }
            guard let certificatePEM = input.certificatePem else {
                throw .invalid(
                    "certificate_pem",
                    "a certificate credential needs certificate_pem and private_key, or pkcs12_base64 and passphrase")
            }
            guard let certificate = try? Certificate(pemEncoded: firstCertificate(in: certificatePEM)) else {
                throw .invalid("certificate_pem", "certificate_pem is not a PEM certificate")
            }
            guard let keyPEM = input.privateKey, (try? NIOSSLPrivateKey(bytes: Array(keyPEM.utf8), format: .pem)) != nil
            else {
                throw .invalid("private_key", "private_key must be the certificate's unencrypted PEM private key")
            }
            return Checked(
                kind: .certificate,
                secret: certificatePEM.trimmingCharacters(in: .whitespacesAndNewlines) + "\n" + keyPEM,
                certificateExpiresAt: certificate.notValidAfter)
        }
    }

    private static func pkcs12(_ encoded: String, passphrase: String) throws(APIError) -> Checked {
        guard let data = Data(base64Encoded: encoded, options: .ignoreUnknownCharacters) else {
            throw .invalid("pkcs12_base64", "pkcs12_base64 is not base64")
        }
        guard let bundle = try? NIOSSLPKCS12Bundle(buffer: Array(data), passphrase: Array(passphrase.utf8)),
            let leaf = bundle.certificateChain.first
        else {
            throw .invalid(
                "pkcs12_base64", "the PKCS#12 file does not open with this passphrase (or holds no certificate)")
        }
        var chain = ""
        var expiresAt: Date?
        for certificate in bundle.certificateChain {
            guard let der = try? certificate.toDERBytes() else { continue }
            chain += pem(der, label: "CERTIFICATE")
            if certificate == leaf { expiresAt = (try? Certificate(derEncoded: der))?.notValidAfter }
        }
        guard let keyDER = try? bundle.privateKey.derBytes,
            let keyPEM = ["PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY"].lazy
                .map({ pem(keyDER, label: $0) })
                .first(where: { (try? NIOSSLPrivateKey(bytes: Array($0.utf8), format: .pem)) != nil })
        else {
            throw .invalid("pkcs12_base64", "the PKCS#12 file's private key cannot be read")
        }
        return Checked(kind: .certificate, secret: chain + keyPEM, certificateExpiresAt: expiresAt)
    }

    private static func isIdentifier(_ text: String) -> Bool {
        text.count == 10 && text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
    }

    private static func firstCertificate(in text: String) -> String {
        guard let end = text.range(of: "-----END CERTIFICATE-----") else { return text }
        return String(text[..<end.upperBound])
    }

    static func pem(_ der: [UInt8], label: String) -> String {
        let encoded = Data(der).base64EncodedString()
        var lines: [Substring] = []
        var index = encoded.startIndex
        while index < encoded.endIndex {
            let next = encoded.index(index, offsetBy: 64, limitedBy: encoded.endIndex) ?? encoded.endIndex
            lines.append(encoded[index..<next])
            index = next
        }
        return "-----BEGIN \(label)-----\n" + lines.joined(separator: "\n") + "\n-----END \(label)-----\n"
    }
}
