import Foundation
import HTTPTypes
import HeraldCore
import Logging
import Synchronization
import Testing

@testable import HeraldAPI

/// Tying an answer and the log to one request: `X-Request-Id`, and the accepted push's log line.
@Suite("Open API: request ids")
struct RequestIdentityTests {
    @Test(
        "every answer carries X-Request-Id (the caller's when sensible, else a new one); the accepted push is logged once with its id, app, key and request id"
    )
    func requestIDs() async throws {
        let lines = Mutex<[String]>([])
        var handler = JSONLogHandler(label: "test.api.requests") { line in lines.withLock { $0.append(line) } }
        handler.logLevel = .info
        let logger = Logger(label: "test.api.requests") { _ in handler }
        try await withAPI(logger: logger) { api in
            let app = try await api.createApp()
            var headers = HTTPFields()
            headers[HTTPField.Name("X-Request-Id")!] = "campaign-42:try-1"
            let push = try await api.call(
                .post, "/v1/pushes", key: app.serverKey,
                json: #"{"audience":{"all":true},"notification":{"alert":{"body":"hi"}}}"#, headers: headers)
            #expect(push.status == .accepted)
            #expect(push.headers[HTTPField.Name("X-Request-Id")!] == "campaign-42:try-1")
            let pushID = try #require(push["id"] as? String)

            let generated = try await api.call(.get, "/v1/pushes", key: app.serverKey)
            #expect(UUID(uuidString: generated.headers[HTTPField.Name("X-Request-Id")!] ?? "") != nil)
            headers[HTTPField.Name("X-Request-Id")!] = "forged\",\"level\":\"debug"
            let refusedID = try await api.call(.get, "/v1/pushes", key: "wrong", headers: headers)
            #expect(refusedID.status == .unauthorized, "refusals carry one too")
            #expect(UUID(uuidString: refusedID.headers[HTTPField.Name("X-Request-Id")!] ?? "") != nil)

            let accepted = lines.withLock { $0 }.compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }.filter { $0["message"] as? String == "push accepted" }
            #expect(accepted.count == 1)
            let metadata = try #require(accepted.first?["metadata"] as? [String: String])
            #expect(metadata["push"] == pushID.lowercased())
            #expect(metadata["app"] == app.id.lowercased())
            #expect(metadata["key"] == app.serverKeyID.lowercased())
            #expect(metadata["request"] == "campaign-42:try-1")
        }
    }
}
