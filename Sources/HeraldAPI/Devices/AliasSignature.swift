import Crypto
import Foundation

/// The proof an app's back-end gives that an alias belongs to the user of a device: HMAC-SHA256
/// of the alias's UTF-8 bytes, keyed with the app's identity secret (its text's bytes), in
/// hexadecimal. The back-end computes it; a client key presents it to bind the alias.
enum AliasSignature {
    /// The signature of `alias` under `secret`, in lower-case hexadecimal.
    static func sign(alias: String, secret: [UInt8]) -> String {
        let code = HMAC<SHA256>.authenticationCode(for: Array(alias.utf8), using: SymmetricKey(data: secret))
        return code.map { String(format: "%02x", $0) }.joined()
    }

    /// Whether `signature` (hexadecimal, either case) signs `alias` under one of `secrets`. The
    /// comparison takes the same time wherever the first difference is.
    static func verify(_ signature: String, alias: String, secrets: [[UInt8]]) -> Bool {
        let presented = Array(signature.lowercased().utf8)
        var matched = false
        for secret in secrets {
            let expected = Array(sign(alias: alias, secret: secret).utf8)
            guard expected.count == presented.count else { continue }
            var difference: UInt8 = 0
            for index in 0..<expected.count { difference |= expected[index] ^ presented[index] }
            matched = matched || difference == 0
        }
        return matched
    }

    /// A new identity secret: `hid_` and 32 random bytes in URL-safe base64.
    static func newSecret() -> String {
        "hid_" + APIKeySecret.randomText()
    }
}
