import Foundation
import HeraldDomain
import HeraldStore
import PostgresNIO
import Testing

/// The safety net for a push left `sending` with every batch complete (docs/operations.md).
@Suite struct SettledPushTests {
    @Test(
        "a push whose fan-out ended and whose every batch has its outcome, yet still sending, is completed by the sweep; one still waiting for an outcome is not"
    )
    func settledPushesAreCompleted() async throws {
        try await withMigratedStore { client, logger in
            let app = try await AppRepository(client: client, logger: logger).create(
                name: "Settled", bundleID: "com.example.settled")
            let pushes = PushRepository(client: client, logger: logger)
            let claims = FanoutClaimRepository(client: client, logger: logger)
            let progress = FanoutProgressRepository(client: client, logger: logger)
            var ids: [UUID] = []
            for _ in 0..<2 {
                let id = UUID()
                _ = try await pushes.create(
                    NewPush(id: id, appID: app.id, audienceJSON: #"{"all":true}"#, notificationJSON: "{}", payload: []),
                    announcement: try .pushEvent(.created, pushID: id, appID: app.id, topic: "herald.test.settled"))
                #expect(try await claims.claim([id], by: "settled-center", lease: .seconds(60)).count == 1)
                let batch = RecordedBatch(
                    pushID: id, sequence: 0, firstDevice: 1, lastDevice: 10, targetCount: 10,
                    environment: .production, topic: "com.example.settled")
                _ = try await progress.recordPage(pushID: id, by: "settled-center", cursor: 10, batches: [batch])
                #expect(try await progress.finishFanout(pushID: id, by: "settled-center"))
                ids.append(id)
            }
            // The first push's batch got its outcome without the completion check that follows
            // it (the state a lost race leaves); the second's is still out.
            try await client.query(
                "UPDATE push_batches SET completed_at = now() WHERE push_id = \(ids[0])", logger: logger)
            #expect(try await !progress.isCompleted(pushID: ids[0]))
            #expect(try await progress.completeSettled(after: .seconds(60), limit: 10).isEmpty, "not before `after`")
            #expect(try await progress.completeSettled(after: .zero, limit: 10) == [ids[0]])
            #expect(try await progress.isCompleted(pushID: ids[0]))
            #expect(try await pushes.push(id: ids[0], appID: app.id)?.state == .completed)
            #expect(try await !progress.isCompleted(pushID: ids[1]), "a batch without outcome keeps it sending")
            #expect(try await progress.completeSettled(after: .zero, limit: 10).isEmpty, "each push once")
        }
    }
}
