import Crypto
import HeraldAPNsVocabulary
import HeraldCore

/// The bearer token a sender shows a gateway's delivery port (`POST /v1/deliveries`): an
/// HMAC-SHA256 of a fixed label under the master key, so every process holding
/// `HERALD_MASTER_KEY` derives the same token and nothing else needs sharing, and the key itself
/// never crosses the network.
public enum DeliveryToken {
    /// The token of `masterKey` (the setting's text).
    public static func derive(masterKey: String) -> String {
        let code = HMAC<SHA256>.authenticationCode(
            for: Array("herald-gateway-deliveries-v1".utf8), using: SymmetricKey(data: Array(masterKey.utf8)))
        return Hexadecimal.encode(Array(code))
    }

    /// Whether `presented` is `expected`, compared in constant time.
    public static func matches(_ presented: Substring, _ expected: String) -> Bool {
        SecretHasher.matches(presented, expected)
    }
}
