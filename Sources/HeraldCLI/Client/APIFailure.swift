import Foundation
import HTTPTypes

/// herald-api answered with an error: its status and its `{"error": {code, message, field}}`.
struct APIFailure: Error, CustomStringConvertible {
    var operation: String
    var status: Int
    var code: String
    var message: String
    var field: String?

    /// The body's error, or what can be said without one.
    init(operation: String, status: Int, body: [UInt8]) {
        self.operation = operation
        self.status = status
        let error = (try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])?["error"] as? [String: Any]
        code = error?["code"] as? String ?? "http_\(status)"
        message = error?["message"] as? String ?? "no error body"
        field = error?["field"] as? String
    }

    var exitStatus: ExitStatus {
        switch status {
        case 401, 403: .notAllowed
        case 503: .unavailable
        default: .failure
        }
    }

    /// One line: the operation, status, code and message, and a hint where one helps.
    var description: String {
        var text = "\(operation): \(status) \(code): \(message)"
        if let field { text += " (field \(field))" }
        switch status {
        case 401: text += " — check HERALD_API_KEY / HERALD_ADMIN_TOKEN (or the config file in HERALD_CLI_CONFIG)"
        case 403:
            text += " — this key may not do that (client keys only register devices; apps need the admin token)"
        case 429: text += " — rate limited; retry after the time in Retry-After"
        case 503: text += " — herald-api cannot reach its database; it recovers by itself when the database is back"
        default: break
        }
        return text
    }
}
