import Foundation
import HTTPTypes
import HeraldStore
import Testing

@testable import HeraldAPI

/// Per-app limits answered as the API documents them: a burst of creates past the limit stores
/// exactly up to it, the rest answered 409 with the limit's code (the race itself:
/// PerAppLimitStoreTests).
@Suite("per-app limits through the API")
struct PerAppLimitTests {
    /// Sends `count` creates at once; returns their statuses and error codes. The creates go through
    /// ``APITest/callUnhurried(_:_:key:body:contentType:clientLogger:)``, whose client opens
    /// connections side by side: the test client's one connection takes them one after another,
    /// and its 20 s covered all twelve webhook creates (a `readTimeout` seen in a full run).
    static func burst(_ api: APITest, count: Int, _ request: @escaping @Sendable (Int) async throws -> APITest.Answer)
        async throws -> [(HTTPResponse.Status, String?)]
    {
        try await withThrowingTaskGroup(of: (HTTPResponse.Status, String?).self) { group in
            for index in 0..<count {
                group.addTask {
                    let answer = try await request(index)
                    return (answer.status, answer.errorCode)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
    }

    @Test("twelve webhook endpoints created at once: ten stored, two answered 409 webhook_limit")
    func webhooksAtOnce() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            let answers = try await Self.burst(api, count: 12) { index in
                try await api.callUnhurried(
                    .post, "/v1/apps/\(app.id)/webhooks", key: APITest.adminToken,
                    body: #"{"url":"https://hooks.example.com/herald/\#(index)","event_types":["push.completed"]}"#,
                    contentType: "application/json")
            }
            #expect(answers.filter { $0.0 == .created }.count == APIHandler.webhooksPerApp)
            #expect(answers.filter { $0.0 == .conflict && $0.1 == "webhook_limit" }.count == 2, "\(answers)")
            let listed = try await api.call(.get, "/v1/apps/\(app.id)/webhooks", key: APITest.adminToken)
            #expect((listed["webhooks"] as? [Any])?.count == APIHandler.webhooksPerApp)
        }
    }

    @Test("the last segment place taken by six creates at once: one stored, five answered 409 segment_limit")
    func segmentsAtOnce() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            let filter = #"{"attribute":"app_version","op":"gte","value":"5.0"}"#
            for index in 0..<(SegmentRepository.maximumPerApp - 1) {
                let made = try await api.call(
                    .post, "/v1/segments", key: app.serverKey, json: #"{"name":"s\#(index)","filter":\#(filter)}"#)
                #expect(made.status == .created)
            }
            let answers = try await Self.burst(api, count: 6) { index in
                try await api.callUnhurried(
                    .post, "/v1/segments", key: app.serverKey, body: #"{"name":"last \#(index)","filter":\#(filter)}"#,
                    contentType: "application/json")
            }
            #expect(answers.filter { $0.0 == .created }.count == 1, "\(answers)")
            #expect(answers.filter { $0.0 == .conflict && $0.1 == "segment_limit" }.count == 5, "\(answers)")
            let listed = try await api.call(.get, "/v1/segments", key: app.serverKey)
            #expect((listed["segments"] as? [Any])?.count == SegmentRepository.maximumPerApp)
        }
    }
}
