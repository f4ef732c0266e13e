import Foundation
import HTTPTypes
import Logging
import OpenAPIRuntime
import PostgresNIO

/// Turns every error of an operation into Herald's JSON error answer: ``APIError``s as they
/// are, requests the generated decoder refused as 400/415 with what was wrong, an unreachable
/// database as 503. Anything else is a bug: logged, and answered 500 without details.
struct ErrorResponseMiddleware: ServerMiddleware {
    let logger: Logger
    /// Operations unfinished after their deadline answer 503 (but for those that
    /// ``OperationTraits/outlivesRequestTimeout``).
    let deadlines: RequestDeadlines

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, metadata: ServerRequestMetadata, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, ServerRequestMetadata) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        do {
            // An empty body is no body: an operation whose body is optional (rotateKey) then
            // reads it as absent. RouteErrorMiddleware gave every JSON body its length.
            let body = body?.length == .known(0) ? nil : body
            if OperationTraits.of(operationID: operationID).contains(.outlivesRequestTimeout) {
                return try await next(request, body, metadata)
            }
            // The task group below waits for `next` to return before this does.
            return try await withoutActuallyEscaping(next) { next in
                try await deadlines.guarding { try await next(request, body, metadata) }
            }
        } catch {
            let apiError = Self.apiError(for: error, operationID: operationID, logger: logger)
            return Self.response(for: apiError)
        }
    }

    static func response(for error: APIError) -> (HTTPResponse, HTTPBody?) {
        var fields = error.headers
        fields[.contentType] = "application/json"
        return (HTTPResponse(status: error.status, headerFields: fields), HTTPBody(error.body))
    }

    static func apiError(for error: any Error, operationID: String, logger: Logger) -> APIError {
        // The generated code wraps what the handler (or its own decoding) threw in a ServerError.
        let serverError = error as? ServerError
        let cause = serverError?.underlyingError ?? error
        if let apiError = cause as? APIError { return apiError }
        if let decodingError = cause as? DecodingError { return describe(decodingError) }
        // A statement PostgreSQL stopped at herald-api's statement_timeout: slow, not down.
        if (cause as? PSQLError)?.serverInfo?[.sqlState] == "57014" { return .timedOut }
        if isDatabaseUnavailable(cause) { return .unavailable }
        if let rejected = rejectedValue(cause) { return rejected }
        if let serverError, serverError.httpStatus == .unsupportedMediaType {
            return APIError(
                .unsupportedMediaType, code: .unsupportedMediaType,
                message:
                    "\(serverError.causeDescription): send the body as the Open API contract says (usually application/json)"
            )
        }
        if let serverError, serverError.httpStatus.kind == .clientError {
            return APIError(
                serverError.httpStatus, code: .invalidRequest, message: "\(serverError.causeDescription) (\(cause))")
        }
        logger.error("operation failed", metadata: ["operation": "\(operationID)", "error": "\(cause)"])
        return APIError(
            .internalServerError, code: .internalError, message: "Herald failed to answer; the failure is logged.")
    }

    /// A 400 naming the field the decoder stopped at.
    static func describe(_ error: DecodingError) -> APIError {
        func path(_ context: DecodingError.Context, _ last: CodingKey? = nil) -> String? {
            let keys = context.codingPath + (last.map { [$0] } ?? [])
            let names = keys.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
            guard !names.isEmpty else { return nil }
            return names.reduce("") { text, name in
                name.hasPrefix("[") || text.isEmpty ? text + name : text + "." + name
            }
        }
        switch error {
        case .dataCorrupted(let context):
            if context.debugDescription.contains("unknown keys") {
                return APIError(
                    .badRequest, code: .unknownField,
                    message:
                        "The field \"\(context.codingPath.last?.stringValue ?? "?")\" is not part of this request; check its spelling against the Open API contract.",
                    field: path(context))
            }
            if context.codingPath.isEmpty {
                return APIError(
                    .badRequest, code: .invalidJSON,
                    message: "The body is not valid JSON: \(context.debugDescription)",
                    field: path(context))
            }
            return APIError(
                .badRequest, code: .invalidRequest, message: "A value is malformed: \(context.debugDescription)",
                field: path(context))
        case .keyNotFound(let key, let context):
            return APIError(
                .badRequest, code: .missingField, message: "The field \"\(key.stringValue)\" is required.",
                field: path(context, key))
        case .typeMismatch(let type, let context):
            return APIError(
                .badRequest, code: .wrongType, message: "Expected \(describe(type)): \(context.debugDescription)",
                field: path(context))
        case .valueNotFound(let type, let context):
            return APIError(
                .badRequest, code: .wrongType, message: "Expected \(describe(type)), found null.",
                field: path(context))
        @unknown default:
            return APIError(.badRequest, code: .invalidRequest, message: "The request cannot be read: \(error)")
        }
    }

    private static func describe(_ type: Any.Type) -> String {
        let name = "\(type)"
        if name.contains("String") { return "a string" }
        if name.contains("Int") { return "an integer" }
        if name.contains("Double") || name.contains("Float") { return "a number" }
        if name.contains("Bool") { return "true or false" }
        if name.contains("Array") { return "an array" }
        if name.contains("Dictionary") || name.contains("Container") { return "an object" }
        return "another type (\(name))"
    }

    /// A value PostgreSQL refused to store (SQLSTATE class 22, data exception: a NUL character
    /// in a text, a number out of range): the request's fault, answered 400.
    static func rejectedValue(_ error: any Error) -> APIError? {
        guard let psql = error as? PSQLError, let sqlState = psql.serverInfo?[.sqlState] else { return nil }
        if sqlState == "23514" {
            // A CHECK constraint of the schema (`<table>_<column>_check`): a limit the API's own
            // checks did not catch. The request's fault, answered 400 with the column.
            let field = psql.serverInfo?[.columnName] ?? Self.column(ofCheck: psql.serverInfo?[.constraintName])
            return APIError(
                .badRequest, code: .invalidValue,
                message: "\(field ?? "a value") is outside what Herald stores; see docs/limits.md", field: field)
        }
        guard sqlState.hasPrefix("22") else { return nil }
        if sqlState == "22021" || sqlState == "22P05" {
            return APIError(
                .badRequest, code: .invalidText,
                message: "a text field holds a character Herald cannot store (NUL, \\u0000); remove it")
        }
        return APIError(
            .badRequest, code: .invalidValue,
            message: "a value is out of the range Herald stores; check numbers and lengths against the contract")
    }

    /// The column a CHECK constraint named by PostgreSQL's default (`devices_alias_check`) is on.
    static func column(ofCheck constraint: String?) -> String? {
        guard let constraint, constraint.hasSuffix("_check") else { return nil }
        let withoutSuffix = constraint.dropLast("_check".count)
        for table in ["device_tags", "devices", "apps", "api_keys", "apns_credentials", "pushes", "push_batches"]
        where withoutSuffix.hasPrefix(table + "_") {
            return String(withoutSuffix.dropFirst(table.count + 1))
        }
        return nil
    }

    /// PostgreSQL down, unreachable or refusing connections.
    static func isDatabaseUnavailable(_ error: any Error) -> Bool {
        // postgres-nio's pool gives up on a server it cannot connect to ("circuit breaker").
        if String(reflecting: type(of: error)).contains("ConnectionPoolError") { return true }
        guard let psql = error as? PSQLError else { return false }
        switch psql.code {
        case .serverClosedConnection, .connectionError, .uncleanShutdown, .poolClosed, .clientClosedConnection,
            .queryCancelled:
            return true
        default:
            // 08: connection exceptions, 57: operator intervention (shutdown), 53: resources.
            guard let sqlState = psql.serverInfo?[.sqlState] else { return false }
            return sqlState.hasPrefix("08") || sqlState.hasPrefix("57") || sqlState.hasPrefix("53")
        }
    }
}
