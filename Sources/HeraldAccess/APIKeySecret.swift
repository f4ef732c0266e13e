import Foundation
import HeraldCore
import HeraldDomain
import HeraldStore

/// API keys: `hs_` (server), `hc_` (client) or `ha_` (an app's admin key) and 32 random bytes in
/// URL-safe base64 without padding (43 characters).
public enum APIKeySecret {
    public static func generate(kind: APIKeyKind) -> String {
        prefix(kind) + RandomSecret.text()
    }

    public static func prefix(_ kind: APIKeyKind) -> String {
        switch kind {
        case .server: "hs_"
        case .client: "hc_"
        case .admin: "ha_"
        }
    }

    /// Whether `token` has the shape of a key ``generate(kind:)`` makes: anything else is refused
    /// without asking the database.
    public static func isWellFormed(_ token: Substring) -> Bool {
        let utf8 = token.utf8
        guard utf8.count == 46, token.hasPrefix("hs_") || token.hasPrefix("hc_") || token.hasPrefix("ha_") else {
            return false
        }
        return utf8.dropFirst(3).allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                true
            default: false
            }
        }
    }
}
