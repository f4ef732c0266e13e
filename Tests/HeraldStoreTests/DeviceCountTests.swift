import Foundation
import HeraldAPNsVocabulary
import HeraldCore
import HeraldDomain
import PostgresNIO
import Testing

@testable import HeraldStore

/// The kept device counts (migration 0014) against count(*) over the tables, through every way
/// devices change: registration and re-registration, tag updates, imports, APNs invalidation,
/// deletion, the purge of invalid tokens, an app's deletion — before and after the fold.
@Suite("kept device counts")
struct DeviceCountTests {
    /// What count(*) says: the app's devices by environment and status, and every tag's.
    static func counted(_ client: PostgresClient, _ logger: Logger, app: UUID) async throws -> (
        devices: DeviceGroupCounts, tags: [TagCounts]
    ) {
        var devices = DeviceGroupCounts()
        let rows = try await client.query(
            "SELECT environment, status, count(*) FROM devices WHERE app_id = \(app) GROUP BY 1, 2", logger: logger)
        for try await (environment, status, count) in rows.decode((String, String, Int64).self) {
            devices.add(environment: environment, status: status, devices: count)
        }
        var tags: [String: DeviceGroupCounts] = [:]
        let tagRows = try await client.query(
            """
            SELECT t.tag, d.environment, d.status, count(*) FROM device_tags t JOIN devices d ON d.id = t.device_id
            WHERE t.app_id = \(app) GROUP BY 1, 2, 3
            """, logger: logger)
        for try await (tag, environment, status, count) in tagRows.decode((String, String, String, Int64).self) {
            tags[tag, default: DeviceGroupCounts()].add(environment: environment, status: status, devices: count)
        }
        return (
            devices,
            tags.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }.map {
                TagCounts(tag: $0, devices: tags[$0]!)
            }
        )
    }

    /// Every tag of the app, page by page.
    static func allTags(_ counts: DeviceCountRepository, app: UUID, pageSize: Int = 2) async throws -> [TagCounts] {
        var tags: [TagCounts] = []
        var cursor: String?
        repeat {
            let page = try await counts.tags(appID: app, prefix: nil, after: cursor, limit: pageSize)
            tags += page.tags
            cursor = page.more ? page.tags.last?.tag : nil
        } while cursor != nil
        return tags
    }

    /// Kept and counted agree now, and again after a fold.
    static func expectExact(
        _ client: PostgresClient, _ logger: Logger, app: UUID, _ step: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let counts = DeviceCountRepository(client: client, logger: logger)
        let truth = try await counted(client, logger, app: app)
        for moment in ["before the fold", "after the fold"] {
            #expect(
                try await counts.devices(appID: app) == truth.devices, "\(step), \(moment): \(truth.devices)",
                sourceLocation: sourceLocation)
            #expect(
                try await allTags(counts, app: app) == truth.tags, "\(step), \(moment)", sourceLocation: sourceLocation)
            try await counts.fold(limit: 3)
            while try await counts.fold(limit: 3) > 0 {}
        }
    }

    @Test(
        "registrations, re-registrations, tag updates, imports, invalidations, deletions and purges keep the counts exact before and after folding"
    )
    func everyChangeIsCounted() async throws {
        try await withEmptyDatabase { client, logger in
            try await MigrationRunner(client: client, logger: logger).migrate()
            let apps = AppRepository(client: client, logger: logger)
            let app = try await apps.create(name: "counted", bundleID: "com.counted").id
            let other = try await apps.create(name: "other", bundleID: "com.other").id
            let devices = DeviceRepository(client: client, logger: logger)
            func registration(_ token: [UInt8], _ environment: APNsEnvironment, tags: [String], app: UUID = app)
                -> DeviceRegistration
            {
                DeviceRegistration(appID: app, token: token, environment: environment, topic: "com.counted", tags: tags)
            }
            let tokens = (0..<6).map { _ in randomToken() }
            var ids: [Int64] = []
            for (index, token) in tokens.enumerated() {
                let registered = try await devices.register(
                    registration(
                        token, index % 2 == 0 ? .production : .sandbox,
                        tags: index < 4 ? ["news", "sport"] : ["news", "é-weather"]))
                ids.append(registered.id)
            }
            _ = try await devices.register(registration(randomToken(), .production, tags: ["news"], app: other))
            try await Self.expectExact(client, logger, app: app, "six registrations")

            _ = try await devices.register(registration(tokens[0], .sandbox, tags: ["vip"]))
            try await Self.expectExact(client, logger, app: app, "a re-registration changing environment, a new tag")

            try await devices.updateTags(adding: ["vip", "beta"], removing: ["sport"], deviceID: ids[1], appID: app)
            try await Self.expectExact(client, logger, app: app, "tags added and removed")

            try await client.query(
                """
                UPDATE devices SET status = 'invalid', invalidated_at = now() - interval '40 days', invalid_reason = 'Unregistered'
                WHERE id = ANY(\([ids[2], ids[3], ids[4]]))
                """, logger: logger)
            try await Self.expectExact(client, logger, app: app, "three invalidated")

            _ = try await devices.register(registration(tokens[2], .production, tags: []))
            try await Self.expectExact(client, logger, app: app, "an invalid token registered again")

            let lines = (0..<40).map { number in
                ImportLine(
                    number: number + 1,
                    registration: registration(
                        number < 5 ? tokens[number] : randomToken(), number % 3 == 0 ? .sandbox : .production,
                        tags: number % 4 == 0 ? ["imported", "news"] : ["imported"]))
            }
            let chunks = AsyncStream<[ImportLine]> { continuation in
                continuation.yield(Array(lines[..<20]))
                continuation.yield(Array(lines[20...]))
                continuation.finish()
            }
            _ = try await devices.importDevices(
                appID: app, chunks: chunks, connectionWithin: .seconds(10), mergeWithin: .seconds(600))
            try await Self.expectExact(client, logger, app: app, "an import, five of its lines known devices")

            #expect(try await devices.delete(id: ids[5], appID: app))
            try await Self.expectExact(client, logger, app: app, "a device deleted")

            try await client.query(
                """
                UPDATE devices SET status = 'invalid', invalidated_at = now() - interval '40 days', invalid_reason = 'Unregistered'
                WHERE id = ANY(\([ids[3], ids[1]]))
                """, logger: logger)
            #expect(try await devices.purgeInvalid(before: Date().addingTimeInterval(-30 * 86_400)) == 2)
            try await Self.expectExact(client, logger, app: app, "invalid tokens purged")

            let counts = DeviceCountRepository(client: client, logger: logger)
            let imported = try await counts.tags(appID: app, prefix: "imp", after: nil, limit: 10)
            #expect(imported.tags.map(\.tag) == ["imported"] && !imported.more)
            #expect(imported.tags.first?.devices.active == 38, "two of its devices purged")

            // The other app's numbers never moved; its deletion takes its counts along, and
            // changes it left unfolded are dropped by the fold.
            #expect(try await counts.devices(appID: other).activeByEnvironment == ["production": 1])
            _ = try await devices.register(registration(randomToken(), .sandbox, tags: ["late"], app: other))
            #expect(try await apps.delete(id: other))
            while try await counts.fold(limit: 100) > 0 {}
            #expect(try await counts.devices(appID: other) == DeviceGroupCounts())
            let leftovers = try await client.query(
                "SELECT (SELECT count(*) FROM device_counts WHERE app_id = \(other)) + (SELECT count(*) FROM device_count_changes)",
                logger: logger)
            for try await left in leftovers.decode(Int64.self) { #expect(left == 0) }
            // Deleted and purged devices and the deleted app's devices took their tags along.
            let orphans = try await client.query(
                "SELECT count(*) FROM device_tags t WHERE NOT EXISTS (SELECT 1 FROM devices d WHERE d.id = t.device_id)",
                logger: logger)
            for try await orphaned in orphans.decode(Int64.self) { #expect(orphaned == 0, "tags without a device") }
        }
    }

    @Test("devices stored before the counts were kept are counted by the migration")
    func migrationCountsExistingDevices() async throws {
        try await withEmptyDatabase { client, logger in
            let migrations = try MigrationRunner.bundledMigrations()
            try await MigrationRunner(
                client: client, logger: logger, migrations: migrations.filter { $0.version <= 13 }
            ).migrate()
            let app = UUID()
            try await client.query(
                "INSERT INTO apps (id, name, bundle_id) VALUES (\(app), 'before', 'com.before')", logger: logger)
            for index in 0..<5 {
                let rows = try await client.query(
                    """
                    INSERT INTO devices (app_id, token, environment, topic, status)
                    VALUES (\(app), \(randomToken().bytea), \(index < 3 ? "production" : "sandbox"), 'com.before',
                            \(index == 4 ? "invalid" : "active"))
                    RETURNING id
                    """, logger: logger)
                for try await id in rows.decode(Int64.self) {
                    try await client.query(
                        "INSERT INTO device_tags (app_id, tag, device_id) VALUES (\(app), 'old', \(id))", logger: logger
                    )
                }
            }
            try await MigrationRunner(client: client, logger: logger, migrations: migrations).migrate()
            let counts = DeviceCountRepository(client: client, logger: logger)
            var expected = DeviceGroupCounts()
            expected.active = 4
            expected.invalid = 1
            expected.activeByEnvironment = ["production": 3, "sandbox": 1]
            #expect(try await counts.devices(appID: app) == expected)
            #expect(
                try await counts.tags(appID: app, prefix: nil, after: nil, limit: 5).tags == [
                    TagCounts(tag: "old", devices: expected)
                ])
            try await Self.expectExact(client, logger, app: app, "after the migration")
        }
    }
}
