import Crypto
import Foundation

/// A token-signing key from Apple's developer account: the `.p8` file's P-256 private key, its
/// key id and the team id.
public struct APNsSigningKey: Sendable {
    public let keyID: String
    public let teamID: String
    let privateKey: P256.Signing.PrivateKey

    /// - Parameter pem: the `.p8` file's contents (`-----BEGIN PRIVATE KEY-----`).
    /// - Throws: ``APNsCredentialError`` when it is not a P-256 private key.
    public init(pem: String, keyID: String, teamID: String) throws(APNsCredentialError) {
        do {
            privateKey = try P256.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw APNsCredentialError("key \(keyID): the .p8 file is not a P-256 private key in PEM form")
        }
        self.keyID = keyID
        self.teamID = teamID
    }

    public init(privateKey: P256.Signing.PrivateKey, keyID: String, teamID: String) {
        self.privateKey = privateKey
        self.keyID = keyID
        self.teamID = teamID
    }

    /// An ES256 provider token (JWT) issued at `issuedAt` (seconds since 1970): header `alg`
    /// and `kid`, claims `iss` and `iat`, raw r‖s signature.
    public func providerToken(issuedAt: Int64) -> String {
        let header = Self.base64URL(Array(#"{"alg":"ES256","kid":"\#(keyID)"}"#.utf8))
        let claims = Self.base64URL(Array(#"{"iss":"\#(teamID)","iat":\#(issuedAt)}"#.utf8))
        let signingInput = header + "." + claims
        // Signing a fixed, well-formed input with a valid key cannot fail.
        let signature = try! privateKey.signature(for: Array(signingInput.utf8)).rawRepresentation
        return signingInput + "." + Self.base64URL(Array(signature))
    }

    static func base64URL(_ bytes: [UInt8]) -> String {
        var text = Data(bytes).base64EncodedString()
        text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }
}

/// When a connection gets a new provider token. Apple refuses tokens older than an hour
/// (ExpiredProviderToken) and a new token on a connection more often than every 20 minutes
/// (TooManyProviderTokenUpdates), so each connection keeps its own token and renews it after
/// `renewAfter`, never sooner than `minimumInterval` after the last.
public struct APNsProviderTokenPolicy: Sendable, Hashable {
    /// Default 50 minutes.
    public var renewAfter: Int64 = 50 * 60
    /// Default 20 minutes.
    public var minimumInterval: Int64 = 20 * 60

    public init() {}

    /// Whether a connection whose token was issued at `issuedAt` (nil: none yet) needs a new one
    /// at `now`. `expired` is true after APNs answered ExpiredProviderToken.
    public func needsNewToken(issuedAt: Int64?, now: Int64, expired: Bool = false) -> Bool {
        guard let issuedAt else { return true }
        let age = now - issuedAt
        if age < minimumInterval { return false }
        return expired || age >= renewAfter
    }
}

/// A credential or key that cannot be used, with what to fix.
public struct APNsCredentialError: Error, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
