import Foundation
import HeraldDomain
import HeraldStore
import PostgresNIO
import Testing

@testable import HeraldStore

/// A push's timing (docs/local-time.md) stored by the Open API's prepared insert.
@Suite struct PushTimingStoreTests {
    @Test(
        "a push with a local time stored on a connection whose prepared insert first saw a push without one (a NULL must not fix the parameter as binary jsonb)"
    )
    func timingAfterANullOnTheSameConnection() async throws {
        try await withMigratedStore { client, logger in
            let app = try await AppRepository(client: client, logger: logger).create(
                name: "Timing", bundleID: "com.example.timing")
            let timing = PushTiming(
                localTime: .init("09:00"), localDate: .init("2030-01-04"), quietHours: .hold, timeToLiveSeconds: 600)
            let plain = NewPush(
                id: UUID(), appID: app.id, audienceJSON: #"{"all":true}"#, notificationJSON: "{}", payload: [])
            var timed = plain
            timed.id = UUID()
            timed.collapseID = NewPush.defaultCollapseID(pushID: timed.id)
            timed.timing = timing
            try await client.withConnection { connection in
                for push in [plain, timed] {
                    let record = try PushRepository.OutboxDraft.pushEvent(
                        .created, pushID: push.id, appID: app.id, topic: "herald.test.timing")
                    for try await _ in try await connection.execute(
                        InsertPushWithAnnouncement(push: push, record: record), logger: logger)
                    {}
                }
            }
            let pushes = PushRepository(client: client, logger: logger)
            #expect(try await pushes.push(id: plain.id, appID: app.id)?.definition.timing == nil)
            #expect(try await pushes.push(id: timed.id, appID: app.id)?.definition.timing == timing)
        }
    }
}
