import Crypto
import Foundation

/// Random secrets in text: API keys, identity secrets, console session and CSRF tokens.
public enum RandomSecret {
    /// 32 random bytes in URL-safe base64 without padding (43 characters).
    public static func text() -> String {
        let bytes = SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }
        return bytes.base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
}
