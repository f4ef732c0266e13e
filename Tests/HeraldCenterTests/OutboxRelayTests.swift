import Foundation
import HeraldStore
import PostgresNIO
import Testing

@testable import HeraldCenter

@Suite("the outbox relay publishes at the commit, not at its next poll")
struct OutboxRelayTests {
    @Test("with an interval of an hour, a push's announcement is published once its transaction commits")
    func publishesWhenNotified() async throws {
        try await withCenterEnvironment { env in
            var settings = env.settings(name: "center-relay")
            settings.outboxInterval = .seconds(3600)
            let center = try env.startCenter(settings)
            // The relay's first round (at start) finds nothing; after it, only a notification wakes it.
            #expect(try await env.eventually { try await Self.relayListens(env.database) })
            _ = try await env.createPush(audience: .everyone)
            #expect(try await env.eventually { try await Self.unpublished(env.database) == 0 })
            // Once more, with the relay surely past its first round and waiting for its hour.
            _ = try await env.createPush(audience: .everyone)
            #expect(try await env.eventually { try await Self.unpublished(env.database) == 0 })
            await center.stop()
        }
    }

    /// Whether a session of this database listens on the outbox's channel.
    static func relayListens(_ client: PostgresClient) async throws -> Bool {
        let rows = try await client.query(
            """
            SELECT count(*) FROM pg_stat_activity
            WHERE datname = current_database() AND query ILIKE \("LISTEN%" + OutboxRepository.notificationChannel + "%")
            """)
        for try await count in rows.decode(Int64.self) { return count > 0 }
        return false
    }

    static func unpublished(_ client: PostgresClient) async throws -> Int64 {
        for try await count in try await client.query("SELECT count(*) FROM outbox WHERE published_at IS NULL").decode(
            Int64.self)
        {
            return count
        }
        return -1
    }
}
