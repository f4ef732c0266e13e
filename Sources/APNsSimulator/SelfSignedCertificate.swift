import Crypto
import Foundation
import NIOSSL
import SwiftASN1
import X509

extension SimulatorIdentity {
    /// Makes a self-signed P-256 certificate valid for `localhost`, `127.0.0.1` and `::1` (plus
    /// `extraNames`), for one year from an hour ago.
    /// - Returns: the identity; its `certificatePEM` is what clients must trust.
    public static func selfSigned(extraNames: [String] = []) throws -> (
        identity: SimulatorIdentity, privateKeyPEM: String
    ) {
        let key = P256.Signing.PrivateKey()
        let name = try DistinguishedName {
            CommonName("apns-sim")
            OrganizationName("Herald development")
        }
        let now = Date()
        var alternativeNames: [GeneralName] = [
            .dnsName("localhost"),
            .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1])),
            .ipAddress(ASN1OctetString(contentBytes: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1])),
        ]
        alternativeNames += extraNames.map { GeneralName.dnsName($0) }
        let certificate = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(key.publicKey),
            notValidBefore: now.addingTimeInterval(-3600),
            notValidAfter: now.addingTimeInterval(365 * 24 * 3600),
            issuer: name,
            subject: name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(digitalSignature: true, keyCertSign: true))
                try ExtendedKeyUsage([.serverAuth, .clientAuth])
                SubjectAlternativeNames(alternativeNames)
            },
            issuerPrivateKey: Certificate.PrivateKey(key))
        let certificatePEM = try certificate.serializeAsPEM().pemString
        let keyPEM = key.pemRepresentation
        let identity = SimulatorIdentity(
            certificateChain: [try NIOSSLCertificate(bytes: Array(certificatePEM.utf8), format: .pem)],
            privateKey: try NIOSSLPrivateKey(bytes: Array(keyPEM.utf8), format: .pem),
            certificatePEM: certificatePEM)
        return (identity, keyPEM)
    }
}
