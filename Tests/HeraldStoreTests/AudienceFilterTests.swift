import Foundation
import HeraldAPNs
import HeraldAPNsVocabulary
import HeraldCore
import HeraldDomain
import PostgresNIO
import Testing

@testable import HeraldStore

/// Filters over device attributes (docs/segments.md): how they read and what they refuse, and the
/// devices they select in PostgreSQL — through bound parameters (pages, counts) and through the
/// literal statement the fan-out's COPY runs, which must agree.
@Suite("audience filters")
struct AudienceFilterTests {
    static func filter(_ json: String) throws -> AudienceFilter {
        try AudienceFilter(json: try JSONValue(jsonText: json))
    }

    static func refusal(_ json: String) -> AudienceFilterError? {
        do {
            _ = try AudienceFilter(json: try JSONValue(jsonText: json))
            return nil
        } catch let error as AudienceFilterError {
            return error
        } catch {
            return AudienceFilterError(path: "?", message: "\(error)")
        }
    }

    @Test("a filter that does not make sense is refused with where and why")
    func refusals() throws {
        #expect(Self.refusal(#"[]"#)?.message == "a filter is a JSON object")
        #expect(Self.refusal(#"{"attribute":"shoe_size","op":"eq","value":"9"}"#)?.path == "filter.attribute")
        #expect(Self.refusal(#"{"attribute":"country","op":"like","value":"D%"}"#)?.path == "filter.op")
        #expect(Self.refusal(#"{"attribute":"country","op":"gt","value":"DE"}"#) != nil, "text has no order")
        #expect(Self.refusal(#"{"attribute":"app_version","op":"gte","value":"latest"}"#) != nil)
        #expect(Self.refusal(#"{"attribute":"country","op":"within","value":"30d"}"#) != nil)
        #expect(Self.refusal(#"{"attribute":"last_seen","op":"within","value":"30 days"}"#) != nil)
        #expect(Self.refusal(#"{"attribute":"last_seen","op":"gte","value":"yesterday"}"#) != nil)
        #expect(Self.refusal(#"{"attribute":"country","op":"exists","value":"DE"}"#) != nil)
        #expect(Self.refusal(#"{"attribute":"attributes.Plan","op":"eq","value":"gold"}"#)?.path == "filter.attribute")
        #expect(Self.refusal(#"{"attribute":"attributes.score","op":"gt","value":true}"#) != nil)
        #expect(Self.refusal(#"{"attribute":"country","op":"in","value":["DE",1]}"#) != nil)
        #expect(Self.refusal(#"{"and":[]}"#)?.path == "filter.and")
        #expect(
            Self.refusal(#"{"or":[{"attribute":"country","op":"eq","value":"DE"},{"attribute":"x","op":"eq"}]}"#)?.path
                == "filter.or[1].attribute")
        #expect(Self.refusal(#"{"attribute":"country","op":"eq","value":"DE","extra":1}"#) != nil)
        var deep = #"{"attribute":"country","op":"eq","value":"DE"}"#
        for _ in 0..<6 { deep = #"{"not":\#(deep)}"# }
        #expect(Self.refusal(deep)?.message.contains("deep") == true)
        let many = (0..<51).map { _ in #"{"attribute":"country","op":"eq","value":"DE"}"# }.joined(separator: ",")
        #expect(Self.refusal(#"{"or":[\#(many)]}"#)?.message.contains("50 conditions") == true)
        let filter = try Self.filter(#"{"not":{"attribute":"attributes.score","op":"gte","value":5}}"#)
        #expect(try AudienceFilter(json: filter.json) == filter, "a filter reads back from the JSON it writes")
    }

    @Test("custom attributes: names, types and bounds checked, times kept in UTC")
    func customAttributes() throws {
        let (set, removed) = try DeviceAttributes.normalized([
            "plan": .string("gold"), "renewed": .string("2026-10-01T00:00:00+02:00"), "gone": .null,
        ])
        #expect(set["renewed"] == .string("2026-09-30T22:00:00.000Z"))
        #expect(set["plan"] == .string("gold"))
        #expect(removed == ["gone"])
        #expect(throws: DeviceAttributes.Invalid.self) { try DeviceAttributes.normalized(["Plan": .string("x")]) }
        #expect(throws: DeviceAttributes.Invalid.self) { try DeviceAttributes.normalized(["list": .array([])]) }
        #expect(throws: DeviceAttributes.Invalid.self) {
            try DeviceAttributes.normalized(["long": .string(String(repeating: "x", count: 257))])
        }
        let many = Dictionary(uniqueKeysWithValues: (0..<51).map { ("a\($0)", JSONValue.bool(true)) })
        #expect(throws: DeviceAttributes.Invalid.self) { try DeviceAttributes.normalized(many) }
    }

    @Test(
        "each operator selects the devices it should — bound and literal statements alike — merged attributes included, and no other app's"
    )
    func selections() async throws {
        try await withEmptyDatabase { client, logger in
            try await MigrationRunner(client: client, logger: logger).migrate()
            let apps = AppRepository(client: client, logger: logger)
            let app = try await apps.create(name: "segmented", bundleID: "com.segmented").id
            let other = try await apps.create(name: "other", bundleID: "com.other").id
            let devices = DeviceRepository(client: client, logger: logger)
            func register(
                _ app: UUID = app, locale: String?, country: String?, appVersion: String?, osVersion: String?,
                attributes: [String: JSONValue] = [:], tags: [String] = [], token: [UInt8] = randomToken()
            ) async throws -> Int64 {
                try await devices.register(
                    DeviceRegistration(
                        appID: app, token: token, environment: .production, topic: "com.segmented", tags: tags,
                        locale: locale, country: country, appVersion: appVersion, osVersion: osVersion,
                        attributes: try DeviceAttributes.normalized(attributes))
                ).id
            }
            let token0 = randomToken()
            let d0 = try await register(
                locale: "en_US", country: "US", appVersion: "5.2.0", osVersion: "17.1",
                attributes: [
                    "plan": .string("gold"), "score": .number(10), "beta": .bool(true),
                    "renewed": .string("2026-10-01T00:00:00+02:00"),
                ], tags: ["news"], token: token0)
            let d1 = try await register(
                locale: "de-DE", country: "DE", appVersion: "5.10.1", osVersion: "16.4",
                attributes: ["plan": .string("silver"), "score": .number(3)])
            let d2 = try await register(
                locale: "en-GB", country: "GB", appVersion: "5.2", osVersion: "17.0",
                attributes: ["score": .number(7.5)])
            let d3 = try await register(
                locale: "fr_FR", country: "FR", appVersion: "4.9.9", osVersion: nil, tags: ["news", "sport"])
            let d4 = try await register(locale: nil, country: nil, appVersion: nil, osVersion: nil, tags: ["sport"])
            _ = try await register(
                other, locale: "en_US", country: "US", appVersion: "9.0", osVersion: "17.1",
                attributes: ["plan": .string("gold")], tags: ["news", "sport"])
            try await client.query(
                "UPDATE devices SET registered_at = now() - interval '60 days' WHERE id = \(d4)", logger: logger)

            let audiences = AudienceRepository(client: client, logger: logger)
            func selected(
                _ json: String, tags: PushAudience.TagFilter? = nil, sourceLocation: SourceLocation = #_sourceLocation
            )
                async throws -> Set<Int64>
            {
                let selection = AudienceSelection(
                    appID: app, audience: PushAudience(tags: tags, filter: try Self.filter(json)))
                let page = try await audiences.page(selection, after: 0, limit: 100)
                let bound = Set(page.devices.deviceIDs)
                // The fan-out's COPY runs the same statement with its values written in.
                var literal = LiteralValues()
                let sql = AudienceRepository.sql(
                    selection, columns: "d.id", after: 0, tail: "ORDER BY d.id", values: &literal)
                var written = Set<Int64>()
                for try await id in try await client.query(PostgresQuery(unsafeSQL: sql), logger: logger).decode(
                    Int64.self)
                {
                    written.insert(id)
                }
                #expect(
                    bound == written, "bound and literal statements agree for \(json)", sourceLocation: sourceLocation)
                #expect(
                    try await audiences.count(selection) == Int64(bound.count), "count agrees for \(json)",
                    sourceLocation: sourceLocation)
                return bound
            }

            #expect(try await selected(#"{"attribute":"language","op":"eq","value":"EN"}"#) == [d0, d2])
            #expect(try await selected(#"{"attribute":"locale","op":"in","value":["fr_FR","de-DE"]}"#) == [d1, d3])
            #expect(try await selected(#"{"attribute":"country","op":"in","value":["us","de"]}"#) == [d0, d1])
            #expect(
                try await selected(#"{"attribute":"country","op":"ne","value":"US"}"#) == [d1, d2, d3, d4],
                "a device without a country is not in the US")
            #expect(try await selected(#"{"attribute":"country","op":"not_exists"}"#) == [d4])
            #expect(
                try await selected(#"{"attribute":"app_version","op":"gte","value":"5.2.0"}"#) == [d0, d1, d2],
                "5.10.1 is above 5.2.0, and 5.2 is 5.2.0")
            #expect(try await selected(#"{"attribute":"app_version","op":"lt","value":"5.10"}"#) == [d0, d2, d3])
            #expect(try await selected(#"{"attribute":"app_version","op":"eq","value":"5.2"}"#) == [d0, d2])
            #expect(
                try await selected(#"{"attribute":"app_version","op":"in","value":["4.9.9","5.10.1"]}"#) == [d1, d3])
            #expect(try await selected(#"{"attribute":"os_version","op":"exists"}"#) == [d0, d1, d2])
            #expect(try await selected(#"{"attribute":"last_seen","op":"within","value":"30d"}"#) == [d0, d1, d2, d3])
            #expect(try await selected(#"{"attribute":"last_seen","op":"not_within","value":"30d"}"#) == [d4])
            #expect(try await selected(#"{"attribute":"first_registered","op":"within","value":"1h"}"#).count == 5)
            #expect(try await selected(#"{"attribute":"tag","op":"eq","value":"sport"}"#) == [d3, d4])
            #expect(try await selected(#"{"attribute":"tag","op":"not_in","value":["news","sport"]}"#) == [d1, d2])
            #expect(try await selected(#"{"attribute":"attributes.plan","op":"eq","value":"gold"}"#) == [d0])
            #expect(
                try await selected(#"{"attribute":"attributes.plan","op":"in","value":["gold","silver"]}"#) == [d0, d1])
            #expect(try await selected(#"{"attribute":"attributes.plan","op":"not_exists"}"#) == [d2, d3, d4])
            #expect(try await selected(#"{"attribute":"attributes.score","op":"gte","value":5}"#) == [d0, d2])
            #expect(try await selected(#"{"attribute":"attributes.score","op":"in","value":[3,7.5]}"#) == [d1, d2])
            #expect(try await selected(#"{"attribute":"attributes.beta","op":"eq","value":true}"#) == [d0])
            #expect(try await selected(#"{"attribute":"attributes.beta","op":"ne","value":true}"#) == [d1, d2, d3, d4])
            #expect(
                try await selected(#"{"attribute":"attributes.renewed","op":"gte","value":"2026-09-30T21:00:00Z"}"#)
                    == [d0],
                "a time attribute compares as a time, in UTC")
            #expect(
                try await selected(#"{"attribute":"attributes.renewed","op":"gte","value":"2026-09-30T23:00:00Z"}"#)
                    .isEmpty)
            #expect(
                try await selected(
                    #"{"or":[{"attribute":"tag","op":"eq","value":"sport"},{"and":[{"attribute":"country","op":"eq","value":"DE"},{"not":{"attribute":"attributes.plan","op":"eq","value":"gold"}}]}]}"#
                ) == [d1, d3, d4])
            #expect(
                try await selected(#"{"attribute":"country","op":"eq","value":"US"}"#, tags: .init(any: ["news"])) == [
                    d0
                ],
                "a filter narrows the tags")

            // A re-registration merges: null removes, new keys join, the others stay.
            _ = try await register(
                locale: nil, country: nil, appVersion: "5.3.0", osVersion: nil,
                attributes: ["plan": .null, "level": .number(3)], token: token0)
            let merged = try #require(try await devices.device(id: d0, appID: app))
            #expect(
                merged.attributes == [
                    "score": .number(10), "beta": .bool(true), "renewed": .string("2026-09-30T22:00:00.000Z"),
                    "level": .number(3),
                ])
            #expect(merged.appVersion == "5.3.0" && merged.country == "US", "what is not given stays")
            #expect(try await selected(#"{"attribute":"attributes.plan","op":"eq","value":"gold"}"#).isEmpty)

            // Past 50 attributes (after merging) the database refuses, naming the field.
            let many = Dictionary(uniqueKeysWithValues: (0..<47).map { ("k\($0)", JSONValue.bool(true)) })
            await #expect(throws: DeviceLimits.Exceeded.self) {
                try await devices.describe(
                    deviceID: d0, appID: app, country: nil, appVersion: nil, osVersion: nil,
                    attributes: try DeviceAttributes.normalized(many))
            }
            #expect(try await devices.device(id: d0, appID: app)?.attributes.count == 4, "nothing changed")
        }
    }
}
