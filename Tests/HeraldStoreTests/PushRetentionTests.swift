import Foundation
import HeraldCore
import PostgresNIO
import Testing

@testable import HeraldStore

/// Nothing grows without bound: pushes past the retention window and old audit entries go, and
/// what users read of them (the statistics) stays the same.
@Suite("retention of pushes and of the audit log")
struct PushRetentionTests {
    /// Inserts a push `daysAgo` old in `state`, with counters and, when it rejected some, its
    /// failed deliveries and a batch.
    static func push(
        _ client: PostgresClient, _ logger: Logger, app: UUID, state: String, daysAgo: Int, recallOf: UUID? = nil,
        targeted: Int64 = 10, accepted: Int64 = 7, reasons: [String: Int64] = ["BadDeviceToken": 2, "Unregistered": 1]
    ) async throws -> UUID {
        let id = UUID()
        let rejected = reasons.values.reduce(0, +)
        let reasonsJSON = String(decoding: try JSONEncoder().encode(reasons), as: UTF8.self)
        try await client.query(
            """
            INSERT INTO pushes (id, app_id, state, audience, notification, payload, collapse_id, recall_of, created_at)
            VALUES (\(id), \(app), \(state), '{"all":true}', '{}', '\\x7b7d', \(id.uuidString), \(recallOf),
                    now() - make_interval(days => \(Int32(daysAgo))))
            """, logger: logger)
        try await client.query(
            """
            INSERT INTO push_counters (push_id, targeted, accepted, rejected, tokens_invalidated, rejected_by_reason)
            VALUES (\(id), \(targeted), \(accepted), \(rejected), \(reasons["Unregistered"] ?? 0), \(reasonsJSON)::jsonb)
            """, logger: logger)
        try await client.query(
            """
            INSERT INTO push_batches (push_id, sequence, first_device, last_device, target_count)
            VALUES (\(id), 0, 1, \(targeted), \(Int32(targeted)))
            """, logger: logger)
        for device in 0..<rejected {
            try await client.query(
                "INSERT INTO failed_deliveries (push_id, device_id, status, reason) VALUES (\(id), \(device), 'rejected', 'BadDeviceToken')",
                logger: logger)
        }
        return id
    }

    static func count(_ table: String, _ client: PostgresClient, _ logger: Logger) async throws -> Int64 {
        let rows = try await client.query(PostgresQuery(unsafeSQL: "SELECT count(*) FROM \(table)"), logger: logger)
        for try await count in rows.decode(Int64.self) { return count }
        return -1
    }

    @Test(
        "finished pushes past the window go with their counters, batches and failures; the statistics stay the same; running pushes and recent recalls keep theirs"
    )
    func pushesPastTheWindowGoAndStatisticsStay() async throws {
        try await withEmptyDatabase { client, logger in
            try await MigrationRunner(client: client, logger: logger).migrate()
            let app = try await AppRepository(client: client, logger: logger).create(name: "r", bundleID: "com.r").id
            let old = try await Self.push(client, logger, app: app, state: "completed", daysAgo: 100)
            let canceled = try await Self.push(client, logger, app: app, state: "canceled", daysAgo: 100)
            let recall = try await Self.push(
                client, logger, app: app, state: "completed", daysAgo: 99, recallOf: canceled, reasons: [:])
            let heldByRecall = try await Self.push(client, logger, app: app, state: "completed", daysAgo: 100)
            let runningRecall = try await Self.push(
                client, logger, app: app, state: "sending", daysAgo: 95, recallOf: heldByRecall, reasons: [:])
            let recent = try await Self.push(client, logger, app: app, state: "completed", daysAgo: 10)
            let stillRunning = try await Self.push(client, logger, app: app, state: "sending", daysAgo: 100)
            let pushes = PushRepository(client: client, logger: logger)
            let since = Date().addingTimeInterval(-365 * 86_400)
            let before = try await pushes.statistics(appID: app, since: since)
            #expect(try await Self.count("pushes", client, logger) == 7)

            // One push a statement: the canceled push takes its recall along.
            let retention = RetentionRepository(client: client, logger: logger)
            var deleted: [Int] = []
            while true {
                let count = try await retention.purgePushes(olderThan: .seconds(90 * 86_400), limit: 1)
                if count == 0 { break }
                deleted.append(count)
            }
            #expect(deleted.sorted() == [1, 2])

            let left = try await client.query("SELECT id FROM pushes", logger: logger)
            var kept: Set<UUID> = []
            for try await id in left.decode(UUID.self) { kept.insert(id) }
            #expect(kept == [heldByRecall, runningRecall, recent, stillRunning])
            #expect(!kept.contains(old) && !kept.contains(recall))
            #expect(try await Self.count("push_counters", client, logger) == 4)
            #expect(try await Self.count("push_batches", client, logger) == 4)
            #expect(try await Self.count("failed_deliveries", client, logger) == 3 * 3)

            let after = try await pushes.statistics(appID: app, since: since)
            #expect(after.pushesByState == before.pushesByState)
            #expect(after.delivery == before.delivery)
            #expect(after.delivery.rejectedByReason == ["BadDeviceToken": 10, "Unregistered": 5])
            // The window itself: a statistics request for the last 30 days never saw them.
            let lastMonth = try await pushes.statistics(appID: app, since: Date().addingTimeInterval(-30 * 86_400))
            #expect(lastMonth.pushesByState == ["completed": 1])
        }
    }

    @Test("audit entries older than their retention go; younger ones cannot be deleted at all")
    func auditEntriesPastTheirRetentionGo() async throws {
        try await withEmptyDatabase { client, logger in
            try await MigrationRunner(client: client, logger: logger).migrate()
            let app = UUID()
            for daysAgo in [420, 60, 40, 1] {
                try await client.query(
                    """
                    INSERT INTO audit_events (app_id, actor, action, occurred_at)
                    VALUES (\(app), 'admin', 'app.updated', now() - make_interval(days => \(Int32(daysAgo))))
                    """, logger: logger)
            }
            let audit = AuditRepository(client: client, logger: logger)
            // The owner's floor (400 days unless lowered) wins over a shorter retention.
            #expect(try await audit.keptAtLeast() == .seconds(400 * 86_400))
            #expect(try await audit.deleteOlder(than: .seconds(50 * 86_400), batch: 1) == 1)
            #expect(try await audit.events(appID: app).count == 3)
            try await client.query(
                "UPDATE herald_audit_policy SET kept_at_least = interval '30 days'", logger: logger)
            #expect(try await audit.deleteOlder(than: .seconds(50 * 86_400), batch: 1) == 1)
            #expect(try await audit.events(appID: app).count == 2)
            // Asked for less than the 30 days the table keeps, it still keeps them.
            #expect(try await audit.deleteOlder(than: .seconds(86_400)) == 1)
            await #expect(throws: PSQLError.self) {
                try await client.query("DELETE FROM audit_events WHERE app_id = \(app)", logger: logger)
            }
            #expect(try await audit.events(appID: app).count == 1)
        }
    }
}
