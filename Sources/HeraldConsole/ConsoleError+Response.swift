import HTTPTypes
import Hummingbird
import NIOCore

/// A refusal that reaches Hummingbird (a database that does not answer while the session is
/// looked up) is a short page with its status.
extension ConsoleError: HTTPResponseError {
    public func response(from request: Request, context: some RequestContext) throws -> Response {
        Response(
            status: status, headers: [.contentType: "text/plain; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(string: message)))
    }
}
