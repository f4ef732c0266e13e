import Crypto
import Foundation
import HeraldAPNsVocabulary
import HeraldCore

/// The proof an app's back-end gives that an alias belongs to the user of a device, HMAC-SHA256
/// keyed with the app's identity secret (its text's bytes), in hexadecimal. The back-end computes
/// it; a client key presents it to bind the alias.
///
/// - v2 (`v2.EXPIRES.HMAC`): of `herald-alias-v2`, the device's token in lower-case hexadecimal,
///   the alias and EXPIRES (Unix seconds), joined by line feeds. Bound to one device and valid
///   until EXPIRES (at most ``maximumLifetime`` ahead): a signature seen once cannot put another
///   device on the alias, nor be used for ever.
/// - v1 (64 hexadecimal digits): of the alias alone. Taken only from apps that allow it
///   (``ClientKeyRules/aliasSignaturesV1``: those created before v2).
public enum AliasSignature {
    /// How far ahead a v2 signature may expire.
    public static let maximumLifetime: Duration = .seconds(30 * 86_400)

    /// What a presented signature came to.
    public enum Check: Equatable, Sendable {
        case valid
        case invalid
        case expired
        /// EXPIRES further ahead than ``maximumLifetime``.
        case tooLong
        /// The v1 form, from an app that takes only v2.
        case oldForm
    }

    /// What the presenter of a refused signature is told (the API names the field
    /// `alias_signature`, the gateway's hello the same), or nil when `check` is ``Check/valid``.
    /// - Parameter hasSecrets: whether the app has an identity secret at all.
    public static func refusal(_ check: Check, hasSecrets: Bool) -> (expired: Bool, message: String)? {
        switch check {
        case .valid: nil
        case .invalid:
            hasSecrets
                ? (
                    false,
                    "alias_signature does not sign this alias for this device under the app's identity secret (v2.EXPIRES.HMAC of herald-alias-v2, the token in hexadecimal, the alias and EXPIRES, one per line)."
                )
                : (
                    false,
                    "This app has no identity secret yet: its admin makes one (POST /v1/apps/{appId}/identity-secret)."
                )
        case .expired: (true, "alias_signature has expired; ask the app's back-end for a new one.")
        case .tooLong:
            (false, "alias_signature expires more than 30 days ahead; the back-end signs for 30 days at most.")
        case .oldForm:
            (
                false,
                "This app takes only v2 alias signatures, bound to the device's token and an expiry (v2.EXPIRES.HMAC; docs/security.md)."
            )
        }
    }

    /// The v1 signature of `alias` under `secret`, in lower-case hexadecimal.
    public static func sign(alias: String, secret: [UInt8]) -> String {
        hmac(Array(alias.utf8), secret)
    }

    /// The v2 signature binding `alias` to the device `token` until `expires` (Unix seconds).
    public static func sign(alias: String, token: [UInt8], expires: Int64, secret: [UInt8]) -> String {
        "v2.\(expires)." + hmac(v2Message(alias: alias, token: token, expires: expires), secret)
    }

    /// Checks `signature` (hexadecimal in either case) for `alias` on the device `token` at `now`
    /// (Unix seconds) under one of `secrets`, each compared in constant time.
    public static func check(
        _ signature: String, alias: String, token: [UInt8], secrets: [[UInt8]], acceptsV1: Bool, now: Int64
    ) -> Check {
        let parts = signature.split(separator: ".", omittingEmptySubsequences: false)
        if parts.count == 3, parts[0] == "v2", let expires = Int64(parts[1]) {
            let presented = parts[2].lowercased()
            let message = v2Message(alias: alias, token: token, expires: expires)
            let matched = secrets.reduce(false) { matched, secret in
                SecretHasher.matches(presented, hmac(message, secret)) || matched
            }
            guard matched else { return .invalid }
            if expires < now { return .expired }
            if expires - now > Int64(maximumLifetime.components.seconds) { return .tooLong }
            return .valid
        }
        guard parts.count == 1 else { return .invalid }
        let presented = signature.lowercased()
        let matched = secrets.reduce(false) { matched, secret in
            SecretHasher.matches(presented, sign(alias: alias, secret: secret)) || matched
        }
        guard matched else { return .invalid }
        return acceptsV1 ? .valid : .oldForm
    }

    private static func v2Message(alias: String, token: [UInt8], expires: Int64) -> [UInt8] {
        Array("herald-alias-v2\n\(Hexadecimal.encode(token))\n\(alias)\n\(expires)".utf8)
    }

    private static func hmac(_ message: [UInt8], _ secret: [UInt8]) -> String {
        Hexadecimal.encode(Array(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: secret))))
    }

    /// A new identity secret: `hid_` and 32 random bytes in URL-safe base64.
    public static func newSecret() -> String {
        "hid_" + RandomSecret.text()
    }
}
