import Foundation
import HTTPTypes
import HeraldCore

/// The console's two cookies: the session token, and (before sign-in) the sign-in form's
/// CSRF token, which the form repeats (a double-submit check). Both `HttpOnly`,
/// `SameSite=Strict`, limited to `/console`, and `Secure` unless the settings turn it off.
struct ConsoleCookies: Sendable {
    static let session = "herald_console"
    static let signInCSRF = "herald_console_signin"

    /// Whether cookies carry `Secure`.
    let secure: Bool

    /// A `Set-Cookie` value giving `name` the value `value`, or deleting it when `value` is nil.
    func setCookie(_ name: String, _ value: String?) -> String {
        var parts = ["\(name)=\(value ?? "")", "Path=/console", "HttpOnly", "SameSite=Strict"]
        if value == nil { parts.append("Max-Age=0") }
        if secure { parts.append("Secure") }
        return parts.joined(separator: "; ")
    }

    /// The value of cookie `name` in the request's `Cookie` headers.
    static func value(_ name: String, in headers: HTTPFields) -> String? {
        for header in headers[values: .cookie] {
            for pair in header.split(separator: ";") {
                let trimmed = pair.drop(while: { $0 == " " })
                guard let equals = trimmed.firstIndex(of: "=") else { continue }
                if trimmed[..<equals] == name {
                    let value = trimmed[trimmed.index(after: equals)...]
                    return value.isEmpty ? nil : String(value)
                }
            }
        }
        return nil
    }

    /// Whether a form's CSRF token matches the expected one (compared in constant time).
    static func csrfMatches(_ presented: String?, _ expected: String) -> Bool {
        guard let presented, !presented.isEmpty else { return false }
        return SecretHasher.matches(presented, expected)
    }
}
