import Crypto
import Foundation
import HeraldAPNs
import HeraldCore

/// The proof an app's back-end gives that an alias belongs to the user of a device: HMAC-SHA256
/// of the alias's UTF-8 bytes, keyed with the app's identity secret (its text's bytes), in
/// hexadecimal. The back-end computes it; a client key presents it to bind the alias.
enum AliasSignature {
    /// The signature of `alias` under `secret`, in lower-case hexadecimal.
    static func sign(alias: String, secret: [UInt8]) -> String {
        Hexadecimal.encode(
            Array(HMAC<SHA256>.authenticationCode(for: Array(alias.utf8), using: SymmetricKey(data: secret))))
    }

    /// Whether `signature` (hexadecimal, either case) signs `alias` under one of `secrets`,
    /// compared in constant time (``SecretHasher/matches(_:_:)``) against each.
    static func verify(_ signature: String, alias: String, secrets: [[UInt8]]) -> Bool {
        let presented = signature.lowercased()
        return secrets.reduce(false) { matched, secret in
            SecretHasher.matches(presented, sign(alias: alias, secret: secret)) || matched
        }
    }

    /// A new identity secret: `hid_` and 32 random bytes in URL-safe base64.
    static func newSecret() -> String {
        "hid_" + RandomSecret.text()
    }
}
