import Foundation
import HeraldStore
import Testing

@Suite("api_replicas: herald-api processes count each other to share the rate limits")
struct APIReplicaRepositoryTests {
    @Test("each heartbeat counts the processes renewed lately; one that leaves or goes silent stops counting")
    func counts() async throws {
        try await withEmptyDatabase { client, logger in
            try await MigrationRunner(client: client, logger: logger).migrate()
            let replicas = APIReplicaRepository(client: client, logger: logger)
            let first = UUID()
            let second = UUID()
            let third = UUID()
            #expect(try await replicas.heartbeat(id: first, name: "api-1", aliveWithin: .seconds(3)) == 1)
            #expect(try await replicas.heartbeat(id: second, name: "api-2", aliveWithin: .seconds(3)) == 2)
            #expect(try await replicas.heartbeat(id: first, name: "api-1", aliveWithin: .seconds(3)) == 2)
            // A third process that went silent 10 s ago (SIGKILLed) is not counted.
            _ = try await replicas.heartbeat(id: third, name: "api-3", aliveWithin: .seconds(3))
            try await client.query(
                "UPDATE api_replicas SET seen_at = now() - interval '10 seconds' WHERE id = \(third)")
            #expect(try await replicas.heartbeat(id: first, name: "api-1", aliveWithin: .seconds(3)) == 2)
            // One that stops gracefully leaves at once.
            try await replicas.leave(id: second)
            #expect(try await replicas.heartbeat(id: first, name: "api-1", aliveWithin: .seconds(3)) == 1)
            // Rows silent for a minute are forgotten.
            try await client.query("UPDATE api_replicas SET seen_at = now() - interval '2 minutes' WHERE id = \(third)")
            _ = try await replicas.heartbeat(id: first, name: "api-1", aliveWithin: .seconds(3))
            var rows = 0
            for try await _ in try await client.query("SELECT id FROM api_replicas").decode(UUID.self) { rows += 1 }
            #expect(rows == 1)
        }
    }
}
