import Foundation
import HTTPTypes
import HeraldAPIContract

/// An error an API caller sees: an HTTP status and `{"error": {"code", "message", "field"}}`.
///
/// `message` says what was wrong and how to fix it; it never carries database or internal
/// details.
struct APIError: Error, Sendable, CustomStringConvertible {
    var status: HTTPResponse.Status
    /// A stable machine-readable code (`invalid_json`, `not_found`, `payload_too_large`, ...).
    var code: APIErrorCode
    var message: String
    /// The request field at fault (`notification.alert.title`), when there is one.
    var field: String?
    /// Extra headers (`Retry-After`, rate-limit headers).
    var headers: HTTPFields

    init(
        _ status: HTTPResponse.Status, code: APIErrorCode, message: String, field: String? = nil,
        headers: HTTPFields = [:]
    ) {
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.headers = headers
    }

    var description: String { "\(status.code) \(code.rawValue): \(message)" }

    static func badRequest(_ message: String, field: String? = nil) -> APIError {
        APIError(.badRequest, code: .invalidRequest, message: message, field: field)
    }

    static func invalid(_ field: String, _ message: String) -> APIError {
        APIError(.unprocessableContent, code: .invalidValue, message: message, field: field)
    }

    static func notFound(_ what: String) -> APIError {
        APIError(.notFound, code: .notFound, message: "\(what) does not exist (or belongs to another app)")
    }

    static func conflict(_ message: String, code: APIErrorCode = .conflict) -> APIError {
        APIError(.conflict, code: code, message: message)
    }

    /// A 429 with `Retry-After` (plus `headers`: an app's rate-limit fields).
    static func tooManyRequests(
        _ message: String, code: APIErrorCode, retryAfterSeconds: Int, headers: HTTPFields = [:]
    ) -> APIError {
        var headers = headers
        headers[.retryAfter] = String(retryAfterSeconds)
        return APIError(.tooManyRequests, code: code, message: message, headers: headers)
    }

    static let unavailable = APIError(
        .serviceUnavailable, code: .databaseUnavailable,
        message: "Herald cannot reach its database right now; nothing was changed. Retry in a few seconds.",
        headers: [.retryAfter: "5"])

    static let timedOut = APIError(
        .serviceUnavailable, code: .timedOut,
        message:
            "Herald's database did not answer in time. Retry in a few seconds (with the same Idempotency-Key, a retried push is not sent twice).",
        headers: [.retryAfter: "5"])

    /// The JSON body.
    var body: [UInt8] {
        var text = #"{"error":{"code":"# + Self.quoted(code.rawValue) + #","message":"# + Self.quoted(message)
        if let field { text += #","field":"# + Self.quoted(field) }
        text += "}}"
        return Array(text.utf8)
    }

    static func quoted(_ text: String) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        let data = (try? encoder.encode(text)) ?? Data("\"\"".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}

extension HTTPField.Name {
    static let retryAfter = HTTPField.Name("Retry-After")!
    static let rateLimitLimit = HTTPField.Name("RateLimit-Limit")!
    static let rateLimitRemaining = HTTPField.Name("RateLimit-Remaining")!
    static let idempotentReplayed = HTTPField.Name("Idempotent-Replayed")!
}
