import Foundation
import HTTPTypes
import HeraldCore
import Hummingbird

/// Who asked, for the logs: each request's id (the caller's `X-Request-Id` when it is a sensible
/// one, else a new UUID), echoed on every answer, and the key it came with.
enum RequestIdentity {
    /// The request id of the request this task serves.
    @TaskLocal static var requestID: String?
    /// The address the request came from (a load balancer's, behind one), for the audit log.
    @TaskLocal static var sourceAddress: String?
    /// The W3C trace context of the request: the caller's `traceparent` when it is well formed,
    /// else a new trace. A push created by the request is stored with it.
    @TaskLocal static var trace: TraceContext?
}

extension HTTPField.Name {
    static let requestID = HTTPField.Name("X-Request-Id")!
    static let traceparent = HTTPField.Name(TraceContext.headerName)!
}

/// The outermost middleware: gives the request its id (``RequestIdentity``) and puts it on the
/// answer, whatever answers (the authentication gate's refusals included), and its trace context.
struct RequestIDMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let id = RequestID.acceptable(request.headers[.requestID]) ?? UUID.random().uuidString.lowercased()
        let trace = request.headers[.traceparent].flatMap { TraceContext(traceparent: $0) } ?? .start()
        var response = try await RequestIdentity.$requestID.withValue(id) {
            try await RequestIdentity.$trace.withValue(trace) { try await next(request, context) }
        }
        response.headers[.requestID] = id
        return response
    }
}
