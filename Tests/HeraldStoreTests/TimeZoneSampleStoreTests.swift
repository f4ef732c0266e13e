import Foundation
import HeraldAPNsVocabulary
import HeraldCore
import HeraldDomain
import HeraldStore
import PostgresNIO
import Testing

/// The sample behind a dry run's estimated local-time waves (docs/local-time.md), read from the
/// real PostgreSQL: only the audience's devices, spread over the app's span of ids, all of them
/// once the sample asked for is as large as the audience.
@Suite("time zones sampled from an audience")
struct TimeZoneSampleStoreTests {
    @Test(
        "a sample reads part of the span, only the audience's devices (its environment, its tags); asked for as many as the audience holds, it reads them all"
    )
    func sampleKeepsToTheAudience() async throws {
        try await withMigratedStore { client, logger in
            let app = try await AppRepository(client: client, logger: logger).create(
                name: "Zones", bundleID: "com.example.zones")
            let devices = DeviceRepository(client: client, logger: logger)
            let zones = ["Asia/Tokyo", "Europe/Berlin", nil]
            for index in 0..<300 {
                _ = try await devices.register(
                    DeviceRegistration(
                        appID: app.id, token: randomToken(), environment: .production, topic: app.bundleID,
                        tags: ["news"], timeZone: zones[index % 3]))
            }
            for _ in 0..<30 {
                _ = try await devices.register(
                    DeviceRegistration(
                        appID: app.id, token: randomToken(), environment: .sandbox, topic: app.bundleID,
                        tags: ["other"], timeZone: "Pacific/Auckland"))
            }
            let audiences = AudienceRepository(client: client, logger: logger)
            func sample(_ audience: PushAudience, size: Int64, wanted: Int) async throws -> [String: Int64] {
                let groups = try await audiences.sampledTimeZoneGroups(
                    AudienceSelection(appID: app.id, audience: audience), audienceSize: size, sampleSize: wanted,
                    slices: 10)
                return Dictionary(uniqueKeysWithValues: groups.map { ($0.timeZone, $0.devices) })
            }

            // About 30 of 300: a tenth of each slice is read, from a random place in it. Other tests
            // register devices into the same id sequence meanwhile, so this app's ids may bunch
            // in a few slices and one sample can miss them all: several samples, each a part.
            let production = PushAudience(all: true, environment: .production)
            var takenInAll: Int64 = 0
            for _ in 0..<10 where takenInAll == 0 {
                let part = try await sample(production, size: 300, wanted: 30)
                let taken = part.values.reduce(0, +)
                takenInAll += taken
                #expect(taken < 300, "a part of the audience: \(part)")
                #expect(Set(part.keys).isSubset(of: ["Asia/Tokyo", "Europe/Berlin", ""]), "no sandbox device: \(part)")
            }
            #expect(takenInAll > 0, "ten samples read none of the audience")

            // Asked for the whole audience: every slice read whole, the counts exact.
            #expect(
                try await sample(production, size: 300, wanted: 300) == [
                    "Asia/Tokyo": 100, "Europe/Berlin": 100, "": 100,
                ])
            #expect(
                try await sample(PushAudience(tags: .init(any: ["other"])), size: 30, wanted: 30) == [
                    "Pacific/Auckland": 30
                ])
            #expect(
                try await sample(PushAudience(tags: .init(any: ["news"], none: ["other"])), size: 300, wanted: 300)
                    .values.reduce(0, +) == 300)

            // An app without devices has no span: an empty sample.
            let empty = try await AppRepository(client: client, logger: logger).create(
                name: "Empty", bundleID: "com.example.empty")
            let none = try await audiences.sampledTimeZoneGroups(
                AudienceSelection(appID: empty.id, audience: PushAudience(all: true)), audienceSize: 1,
                sampleSize: 10, slices: 10)
            #expect(none.isEmpty)
        }
    }
}
