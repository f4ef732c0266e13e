import Foundation
import HeraldKit

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// HeraldKit's HTTP transport over URLSession: what an app uses (proxies, HTTP/2 and the system's
/// trust come with it). Its own module, so that the core links no HTTP stack: on Linux URLSession
/// lives in FoundationNetworking, which needs libcurl.
public struct URLSessionTransport: HeraldHTTPTransport {
    public let session: URLSession

    public init(session: URLSession = .shared) {
        self.session = session
    }

    public func send(method: String, url: URL, headers: [String: String], body: Data) async throws
        -> HeraldHTTPAnswer
    {
        var request = URLRequest(url: url)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.httpBody = body
        let (data, response) = try await session.data(for: request)
        let http = response as? HTTPURLResponse
        return HeraldHTTPAnswer(
            status: http?.statusCode ?? 0, retryAfter: http?.value(forHTTPHeaderField: "Retry-After"), body: data)
    }
}

extension HeraldClient {
    /// A client that reaches herald-api through URLSession (``URLSessionTransport``).
    public init(
        configuration: HeraldConfiguration, notificationCenter: any HeraldNotificationCenter,
        storage: any HeraldStorage, aliasSigner: AliasSigner? = nil, session: URLSession = .shared
    ) {
        self.init(
            configuration: configuration, notificationCenter: notificationCenter, storage: storage,
            transport: URLSessionTransport(session: session), aliasSigner: aliasSigner)
    }
}
