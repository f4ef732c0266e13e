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

    @Test(
        "a caller's traceparent is stored with the push and on its outbox record (same trace, Herald's own span), and logged; without one, the push starts a trace"
    )
    func traceContext() async throws {
        let lines = Mutex<[String]>([])
        var handler = JSONLogHandler(label: "test.api.trace") { line in lines.withLock { $0.append(line) } }
        handler.logLevel = .info
        let logger = Logger(label: "test.api.trace") { _ in handler }
        try await withAPI(logger: logger) { api in
            let app = try await api.createApp()
            var headers = HTTPFields()
            headers[HTTPField.Name("traceparent")!] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
            let body = #"{"audience":{"all":true},"notification":{"alert":{"body":"traced"}}}"#
            let traced = try await api.call(.post, "/v1/pushes", key: app.serverKey, json: body, headers: headers)
            #expect(traced.status == .accepted)
            let untraced = try await api.call(.post, "/v1/pushes", key: app.serverKey, json: body)
            headers[HTTPField.Name("traceparent")!] = "not-a-trace"
            let malformed = try await api.call(.post, "/v1/pushes", key: app.serverKey, json: body, headers: headers)

            func stored(_ answer: APITest.Answer) async throws -> (push: TraceContext?, outbox: TraceContext?) {
                let id = try #require(UUID(uuidString: answer["id"] as? String ?? ""))
                let rows = try await api.database.query(
                    """
                    SELECT p.traceparent, o.traceparent FROM pushes p
                    JOIN outbox o ON o.record_key = decode(replace(\(id.uuidString), '-', ''), 'hex')
                    WHERE p.id = \(id)
                    """, logger: api.logger)
                for try await (push, outbox) in rows.decode((String?, String?).self) {
                    return (
                        push.flatMap { TraceContext(traceparent: $0) }, outbox.flatMap { TraceContext(traceparent: $0) }
                    )
                }
                Issue.record("push \(id) or its outbox record not found")
                return (nil, nil)
            }
            let caller = try await stored(traced)
            #expect(caller.push?.traceID == "4bf92f3577b34da6a3ce929d0e0e4736")
            #expect(caller.push?.parentID != "00f067aa0ba902b7")
            #expect(caller.outbox?.traceID == "4bf92f3577b34da6a3ce929d0e0e4736")
            for answer in [untraced, malformed] {
                let started = try await stored(answer)
                #expect(started.push != nil && started.push?.traceID != "4bf92f3577b34da6a3ce929d0e0e4736")
                #expect(started.outbox?.traceID == started.push?.traceID)
            }
            let accepted = lines.withLock { $0 }.compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }.filter { $0["message"] as? String == "push accepted" }
            let traces: [String] = accepted.compactMap { ($0["metadata"] as? [String: String])?["trace"] }
            #expect(traces.contains("4bf92f3577b34da6a3ce929d0e0e4736"))
        }
    }
}
