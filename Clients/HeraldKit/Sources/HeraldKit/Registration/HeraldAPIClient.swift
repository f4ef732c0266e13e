import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An error herald-api answered (docs/api.md: `{"error": {"code", "message", "field"}}`), or a
/// request that got no answer.
public struct HeraldAPIError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The HTTP status; 0 when no answer came (the network, a timeout).
    public var status: Int
    public var code: String
    public var message: String
    /// The field the error is about (`events[3]`, `alias_signature`), when it names one.
    public var field: String?
    /// The `Retry-After` of a 429 or 503, in seconds.
    public var retryAfterSeconds: Int?

    public var description: String { "herald-api \(status) \(code): \(message)" }

    /// Whether sending the same request later can succeed (no answer, 429, 5xx).
    public var isRetryable: Bool { status == 0 || status == 429 || status >= 500 }
}

/// The few Open API calls an app makes with its client key: register the device, report
/// engagement events. JSON over HTTPS with URLSession.
public struct HeraldAPIClient: Sendable {
    public var baseURL: URL
    public var clientKey: String
    private let session: URLSession

    public init(baseURL: URL, clientKey: String, session: URLSession = .shared) {
        self.baseURL = baseURL
        self.clientKey = clientKey
        self.session = session
    }

    /// `POST /v1/devices`: registers the device or refreshes it.
    public func register(_ registration: DeviceRegistration) async throws -> RegisteredDevice {
        try await send("POST", "/v1/devices", body: registration)
    }

    /// `POST /v1/events`: a batch of up to 500 events.
    public func report(_ events: [EngagementEvent]) async throws -> EventBatchResult {
        try await send("POST", "/v1/events", body: EventBatch(events: events))
    }

    private func send<Body: Encodable, Answer: Decodable>(_ method: String, _ path: String, body: Body)
        async throws -> Answer
    {
        var request = URLRequest(url: baseURL.appendingPathComponent(String(path.dropFirst())))
        request.httpMethod = method
        request.setValue("Bearer \(clientKey)", forHTTPHeaderField: "Authorization")
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        request.httpBody = try Self.encoder.encode(body)
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await session.data(for: request)
        } catch {
            throw HeraldAPIError(status: 0, code: "no_answer", message: "\(error)")
        }
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        guard (200..<300).contains(status) else {
            let answer = try? JSONDecoder().decode(ErrorAnswer.self, from: data)
            let retryAfter = (response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Retry-After").flatMap {
                Int($0)
            }
            throw HeraldAPIError(
                status: status, code: answer?.error.code ?? "http_\(status)",
                message: answer?.error.message ?? String(decoding: data.prefix(200), as: UTF8.self),
                field: answer?.error.field, retryAfterSeconds: retryAfter)
        }
        return try Self.decoder.decode(Answer.self, from: data)
    }

    private struct ErrorAnswer: Decodable {
        struct Body: Decodable {
            var code: String
            var message: String
            var field: String?
        }
        var error: Body
    }

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = .sortedKeys
        return encoder
    }()

    static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return decoder
    }()
}
