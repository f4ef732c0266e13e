import Crypto

/// Hashes API keys for storage: Herald keeps only the SHA-256 of a key, never the key.
///
/// API keys are long random strings (at least 128 bits), so a fast unsalted hash is enough to
/// make a stolen table useless and lets a request's key be looked up by its hash in one query.
public enum SecretHasher {
    /// The SHA-256 of `secret`'s UTF-8 bytes, as 32 bytes.
    public static func hash(_ secret: String) -> [UInt8] {
        Array(SHA256.hash(data: Array(secret.utf8)))
    }

    /// Whether `presented` equals `expected`, in time that does not depend on where they first
    /// differ (their SHA-256 digests are compared in full), so a caller cannot guess a secret
    /// byte by byte from answer times.
    public static func matches(_ presented: some StringProtocol, _ expected: String) -> Bool {
        let a = Array(SHA256.hash(data: Array(presented.utf8)))
        let b = hash(expected)
        var difference: UInt8 = 0
        for index in 0..<a.count { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}
