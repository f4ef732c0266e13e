import Foundation
import HeraldStore
import PostgresNIO
import StoreTestSupport
import Synchronization
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

@Suite("the outbox tells its relays when records are added")
struct OutboxNotificationTests {
    @Test("a commit that added records notifies once; a statement that added none does not")
    func notifiesOnlyWhenRecordsWereAdded() async throws {
        try await withEmptyDatabase { client, logger in
            try await MigrationRunner(client: client, logger: logger).migrate()
            let outbox = OutboxRepository(client: client, logger: logger)
            let seen = Seen()
            let listener = Task {
                try await outbox.listenForAddedRecords(
                    listening: { seen.count.withLock { $0.listening = true } },
                    added: { seen.count.withLock { $0.added += 1 } })
            }
            defer { listener.cancel() }
            #expect(try await StoreTestSupport.eventually { seen.count.withLock { $0.listening } })
            // An insert of no rows (as a replayed push's), then one transaction adding two records.
            try await client.query(
                "INSERT INTO outbox (topic, record_value) SELECT 'herald.pushes', '\\x00'::bytea WHERE false")
            try await client.withTransaction(logger: logger) { connection in
                try await connection.query(
                    "INSERT INTO outbox (topic, record_value) VALUES ('herald.pushes', '\\x01'::bytea)", logger: logger)
                try await connection.query(
                    "INSERT INTO outbox (topic, record_value) VALUES ('herald.pushes', '\\x02'::bytea)", logger: logger)
            }
            // Notifications arrive in commit order: had the empty insert notified, its notification came first.
            #expect(try await StoreTestSupport.eventually { seen.count.withLock { $0.added } >= 1 })
            // A later commit's notification is the fence: everything before it has arrived.
            try await outbox.append(.init(topic: "herald.pushes", key: nil, value: [3]))
            #expect(try await StoreTestSupport.eventually { seen.count.withLock { $0.added } >= 2 })
            #expect(seen.count.withLock { $0.added } == 2)
        }
    }

    final class Seen: Sendable {
        let count = Mutex((listening: false, added: 0))
    }
}
