import Foundation
import HeraldAPNsVocabulary
import HeraldCore
import HeraldDomain
import Logging
import PostgresNIO
import StoreTestSupport
import Testing

@testable import HeraldStore

/// A per-app limit is counted and taken in one step: creates that race for the last place take
/// turns on the app's row, so exactly the limit is stored.
@Suite("per-app limits taken in one step")
struct PerAppLimitStoreTests {
    @Test("six segments created at once for the app's last place: one stored, five refused")
    func lastPlaceTakenOnce() async throws {
        try await withEmptyDatabase { client, logger in
            try await MigrationRunner(client: client, logger: logger).migrate()
            let app = try await AppRepository(client: client, logger: logger).create(
                name: "limits", bundleID: "com.example.limits")
            let segments = SegmentRepository(client: client, logger: logger)
            let filter = try AudienceFilter(
                json: JSONValue(jsonText: #"{"attribute":"country","op":"eq","value":"DE"}"#))
            for index in 0..<(SegmentRepository.maximumPerApp - 1) {
                _ = try await segments.create(
                    id: UUID(), appID: app.id, name: "s\(index)", description: nil, filter: filter)
            }
            // Another session holds the app's row, as a create in flight would: the six creates
            // must queue behind it (and then behind each other), not count at once.
            let refused = try await client.withConnection { holder in
                try await holder.query("BEGIN", logger: logger)
                try await holder.query("SELECT 1 FROM apps WHERE id = \(app.id) FOR NO KEY UPDATE", logger: logger)
                return try await withThrowingTaskGroup(of: Bool.self) { group in
                    for index in 0..<6 {
                        group.addTask {
                            do {
                                _ = try await segments.create(
                                    id: UUID(), appID: app.id, name: "last \(index)", description: nil, filter: filter)
                                return false
                            } catch is PerAppLimitReached {
                                return true
                            }
                        }
                    }
                    try await awaitInPostgres(
                        """
                        (SELECT count(*) FROM pg_stat_activity
                         WHERE datname = current_database() AND wait_event_type = 'Lock') >= 6
                        """, client: client, logger: logger)
                    try await holder.query("COMMIT", logger: logger)
                    return try await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
                }
            }
            #expect(refused == 5)
            #expect(try await segments.count(appID: app.id) == SegmentRepository.maximumPerApp)
        }
    }
}
