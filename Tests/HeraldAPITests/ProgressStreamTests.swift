import Foundation
import HeraldCore
import StoreTestSupport
import Testing

@testable import HeraldAPI

/// Live progress streams (Server-Sent Events) under load: one poll per push however many
/// watch it, streams bounded per app and per process, each with a lifetime.
@Suite("Open API: live progress streams")
struct ProgressStreamTests {
    static let push = #"{"audience":{"all":true},"notification":{"alert":{"title":"Streams","body":"watched"}}}"#

    /// Opens a stream over a socket of its own and waits for its first `progress` event.
    static func openStream(port: Int, key: String, pushID: String) async throws -> RawConnection {
        let connection = try RawConnection(port: port)
        try connection.send(
            "GET /v1/pushes/\(pushID)/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(key)\r\n\r\n")
        let head = try await connection.receive(until: "event: progress")
        guard head.hasPrefix("HTTP/1.1 200") else { throw RawConnection.Failure(description: head) }
        return connection
    }

    @Test("five streams of one push cost one database poll per half second, not five")
    func oneCostPerPush() async throws {
        try await withAPI { api in
            let port = try #require(api.client.port)
            let app = try await api.createApp()
            let pushID = try #require(
                try await api.call(.post, "/v1/pushes", key: app.serverKey, json: Self.push)["id"] as? String)
            var streams: [RawConnection] = []
            for _ in 0..<5 { streams.append(try await Self.openStream(port: port, key: app.serverKey, pushID: pushID)) }
            #expect(try await AuthenticationHardeningTests.metric("herald_api_progress_streams", api) == 5)
            let before = try await AuthenticationHardeningTests.metric("herald_api_progress_polls_total", api)
            let start = ContinuousClock.now
            // Until six polls happened (no fixed window: a loaded machine only makes it longer);
            // five pollers would get there in about half a second, one in about three.
            var polls = 0
            _ = try await eventually {
                polls = try await AuthenticationHardeningTests.metric("herald_api_progress_polls_total", api) - before
                return polls >= 6
            }
            let elapsed = (ContinuousClock.now - start).fractionalSeconds
            // One poller sleeps half a second between polls: never more than this, however
            // slow the machine (five pollers would make up to five times as many).
            #expect(polls >= 6 && Double(polls) <= elapsed / 0.5 + 2, "\(polls) polls in \(elapsed) s")
            withExtendedLifetime(streams) {}
        }
    }

    @Test("past the streams per app a new stream answers 429 too_many_streams; another app still gets one")
    func streamsPerApp() async throws {
        try await withAPI(configure: { $0.streamsPerApp = 2 }) { api in
            let port = try #require(api.client.port)
            let app = try await api.createApp(name: "watched")
            let other = try await api.createApp(name: "other")
            let pushID = try #require(
                try await api.call(.post, "/v1/pushes", key: app.serverKey, json: Self.push)["id"] as? String)
            let first = try await Self.openStream(port: port, key: app.serverKey, pushID: pushID)
            let second = try await Self.openStream(port: port, key: app.serverKey, pushID: pushID)
            let third = try await api.call(.get, "/v1/pushes/\(pushID)/events", key: app.serverKey)
            #expect(third.status == .tooManyRequests && third.errorCode == "too_many_streams", "\(third.text)")
            let otherPush = try #require(
                try await api.call(.post, "/v1/pushes", key: other.serverKey, json: Self.push)["id"] as? String)
            let otherStream = try await Self.openStream(port: port, key: other.serverKey, pushID: otherPush)
            withExtendedLifetime((first, second, otherStream)) {}
        }
    }

    @Test("a stream ends after its lifetime even while the push goes on")
    func streamLifetime() async throws {
        try await withAPI(configure: { $0.streamLifetime = .seconds(1) }) { api in
            let app = try await api.createApp()
            let pushID = try #require(
                try await api.call(.post, "/v1/pushes", key: app.serverKey, json: Self.push)["id"] as? String)
            let events = try await api.call(.get, "/v1/pushes/\(pushID)/events", key: app.serverKey)
            #expect(events.status == .ok && events.text.contains(#""state":"accepted""#))
            let state = try await api.call(.get, "/v1/pushes/\(pushID)", key: app.serverKey)["state"] as? String
            #expect(state == "accepted", "the push goes on; its stream ended")
        }
    }
}
