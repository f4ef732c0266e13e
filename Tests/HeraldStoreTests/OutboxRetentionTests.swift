import Foundation
import HeraldStore
import PostgresNIO
import Testing

@Suite("the outbox does not grow with every push ever sent")
struct OutboxRetentionTests {
    @Test(
        "published records older than the retention are deleted, in bounded statements; unpublished and recent ones stay"
    )
    func deletesOldPublishedRecords() async throws {
        try await withEmptyDatabase { client, logger in
            try await MigrationRunner(client: client, logger: logger).migrate()
            let outbox = OutboxRepository(client: client, logger: logger)
            for index in 0..<7 {
                try await outbox.append(.init(topic: "herald.pushes", key: nil, value: [UInt8(index)]))
            }
            // Six published, one waiting (say the broker is away).
            try await outbox.publishBatch(limit: 6) { _ in }
            // Five of the published ones were published two hours ago.
            try await client.query(
                """
                UPDATE outbox SET published_at = now() - interval '2 hours'
                WHERE id IN (SELECT id FROM outbox WHERE published_at IS NOT NULL ORDER BY id LIMIT 5)
                """)
            #expect(try await outbox.deletePublished(olderThan: .seconds(3600), limit: 3) == 3)
            #expect(try await outbox.deletePublished(olderThan: .seconds(3600), limit: 3) == 2)
            #expect(try await outbox.deletePublished(olderThan: .seconds(3600), limit: 3) == 0)
            var left: [(Int64, Bool)] = []
            for try await (id, published) in try await client.query(
                "SELECT id, published_at IS NOT NULL FROM outbox ORDER BY id"
            ).decode((Int64, Bool).self) {
                left.append((id, published))
            }
            // The recent published record and the unpublished one are kept.
            #expect(left.map(\.1) == [true, false])
        }
    }
}
