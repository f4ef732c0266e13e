import Foundation

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

    public init(status: Int, code: String, message: String, field: String? = nil, retryAfterSeconds: Int? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.retryAfterSeconds = retryAfterSeconds
    }

    public var description: String { "herald-api \(status) \(code): \(message)" }

    /// Whether sending the same request later can succeed (no answer, 429, 5xx).
    public var isRetryable: Bool { status == 0 || status == 429 || status >= 500 }
}

/// One HTTP exchange, as HeraldKit needs it: how the SDK reaches herald-api. HeraldKitURLSession
/// provides one over URLSession (what an app uses); a Linux program brings its own (herald-admin's
/// simulated phones use AsyncHTTPClient), so the core links no HTTP stack.
public protocol HeraldHTTPTransport: Sendable {
    /// Sends a request and returns the answer, whatever its status.
    /// - Throws: when no answer came (the network, a timeout).
    func send(method: String, url: URL, headers: [String: String], body: Data) async throws -> HeraldHTTPAnswer
}

/// An HTTP answer.
public struct HeraldHTTPAnswer: Sendable {
    public var status: Int
    /// The `Retry-After` header, if any.
    public var retryAfter: String?
    public var body: Data

    public init(status: Int, retryAfter: String? = nil, body: Data) {
        self.status = status
        self.retryAfter = retryAfter
        self.body = body
    }
}

/// The few Open API calls an app makes with its client key: register the device, report
/// engagement events. JSON over the transport given.
public struct HeraldAPIClient: Sendable {
    public var baseURL: URL
    public var clientKey: String
    private let transport: any HeraldHTTPTransport

    public init(baseURL: URL, clientKey: String, transport: any HeraldHTTPTransport) {
        self.baseURL = baseURL
        self.clientKey = clientKey
        self.transport = transport
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
        let answer: HeraldHTTPAnswer
        do {
            answer = try await transport.send(
                method: method, url: baseURL.appendingPathComponent(String(path.dropFirst())),
                headers: [
                    "Authorization": "Bearer \(clientKey)", "Content-Type": "application/json",
                    "Accept": "application/json",
                ],
                body: try Self.encoder.encode(body))
        } catch {
            throw HeraldAPIError(status: 0, code: "no_answer", message: "\(error)")
        }
        guard (200..<300).contains(answer.status) else {
            let refusal = try? JSONDecoder().decode(ErrorAnswer.self, from: answer.body)
            throw HeraldAPIError(
                status: answer.status, code: refusal?.error.code ?? "http_\(answer.status)",
                message: refusal?.error.message ?? String(decoding: answer.body.prefix(200), as: UTF8.self),
                field: refusal?.error.field, retryAfterSeconds: answer.retryAfter.flatMap { Int($0) })
        }
        return try Self.decoder.decode(Answer.self, from: answer.body)
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
