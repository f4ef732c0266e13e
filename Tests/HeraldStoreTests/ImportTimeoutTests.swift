import Foundation
import HeraldCore
import PostgresNIO
import Testing

@testable import HeraldStore

/// An import's database side has limits of its own, kept by PostgreSQL.
@Suite struct ImportTimeoutTests {
    @Test("an upload whose COPY runs past its limit is stopped by PostgreSQL: ImportTimedOut(upload), nothing kept")
    func uploadPastItsLimit() async throws {
        try await withEmptyDatabaseNamed { client, logger, name in
            try await MigrationRunner(client: client, logger: logger).migrate()
            let app = try await AppRepository(client: client, logger: logger).create(
                name: "slow upload", bundleID: "com.slow.upload"
            ).id
            let devices = DeviceRepository(client: client, logger: logger)
            func line(_ number: Int) -> ImportLine {
                ImportLine(
                    number: number,
                    registration: DeviceRegistration(
                        appID: app, token: randomToken(), environment: .production, topic: "com.slow.upload"))
            }
            let (chunks, more) = AsyncStream<[ImportLine]>.makeStream()
            more.yield([line(1)])
            let importing = Task {
                try await devices.importDevices(
                    appID: app, chunks: chunks, connectionWithin: .seconds(10), uploadWithin: .milliseconds(300),
                    mergeWithin: .seconds(600))
            }
            // PostgreSQL ends the COPY at its limit: the import's transaction is left aborted.
            var aborted = false
            while !aborted {
                let rows = try await client.query(
                    """
                    SELECT count(*) FROM pg_stat_activity
                    WHERE datname = \(name) AND state = 'idle in transaction (aborted)'
                    """, logger: logger)
                for try await count in rows.decode(Int64.self) { aborted = count > 0 }
                if !aborted { try await Task.sleep(for: .milliseconds(20)) }
            }
            more.yield([line(2)])
            more.finish()
            await #expect {
                _ = try await importing.value
            } throws: {
                ($0 as? ImportTimedOut)?.stage == .upload && ($0 as? ImportTimedOut)?.limit == .milliseconds(300)
            }
            for try await count in try await client.query(
                "SELECT count(*) FROM devices WHERE app_id = \(app)", logger: logger
            ).decode(Int64.self) {
                #expect(count == 0)
            }
        }
    }
}
