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

    /// The caller's id if it is 1 to 128 letters, digits, `-`, `_`, `.` or `:` (anything else could
    /// forge log fields); nil otherwise.
    static func acceptable(_ sent: String?) -> String? {
        guard let sent, (1...128).contains(sent.utf8.count) else { return nil }
        let allowed = sent.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."),
                UInt8(ascii: ":"):
                true
            default: false
            }
        }
        return allowed ? sent : nil
    }
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
        let id = RequestIdentity.acceptable(request.headers[.requestID]) ?? UUID.random().uuidString.lowercased()
        let trace = request.headers[.traceparent].flatMap { TraceContext(traceparent: $0) } ?? .start()
        var response = try await RequestIdentity.$requestID.withValue(id) {
            try await RequestIdentity.$trace.withValue(trace) { try await next(request, context) }
        }
        response.headers[.requestID] = id
        return response
    }
}
