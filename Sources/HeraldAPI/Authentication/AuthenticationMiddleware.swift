import HTTPTypes
import OpenAPIRuntime

/// Admits the caller that ``AuthenticationGate`` resolved (``Principal/presented``) to the
/// operation through ``Admission`` (what the operation demands, the app's rate limit) and runs it
/// with ``Principal/current`` set, the app's rate-limit fields on the answer.
struct AuthenticationMiddleware: ServerMiddleware {
    let admission: Admission

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, metadata: ServerRequestMetadata, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, ServerRequestMetadata) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        let admitted = try admission.admit(
            Principal.presented, to: operationID, path: Substring(request.path ?? ""),
            source: RequestIdentity.sourceAddress)
        guard let principal = admitted.principal else { return try await next(request, body, metadata) }
        var (response, responseBody) = try await Principal.$current.withValue(principal) {
            try await next(request, body, metadata)
        }
        for field in admitted.headers { response.headerFields[field.name] = field.value }
        return (response, responseBody)
    }
}
