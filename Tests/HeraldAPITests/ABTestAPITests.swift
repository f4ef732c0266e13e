import Foundation
import HTTPTypes
import HeraldDomain
import PostgresNIO
import Testing

@testable import HeraldAPI

@Suite("Open API: A/B tests")
struct ABTestAPITests {
    static let abTest = #"""
        {"audience":{"all":true},
         "variants":[{"name":"short","weight":3,"notification":{"alert":{"body":"Sale"}}},
                     {"name":"long","weight":1,"notification":{"alert":{"title":"Summer","body":"Our summer sale starts now"}}}],
         "options":{"holdout":0.2}}
        """#

    @Test("an A/B test is accepted with its variants, refused with a clear error when malformed")
    func variantsAreCheckedAndStored() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            let created = try await api.call(.post, "/v1/pushes", key: app.serverKey, json: Self.abTest)
            #expect(created.status == .accepted, "\(created.text)")
            let id = try #require(created["id"] as? String)
            let status = try await api.call(.get, "/v1/pushes/\(id)", key: app.serverKey)
            #expect(status["holdout"] as? Double == 0.2, "\(status.text)")
            let variants = try #require(status["variants"] as? [[String: Any]])
            #expect(variants.map { $0["name"] as? String } == ["short", "long"])
            #expect(variants.map { $0["weight"] as? Int } == [3, 1])
            let shown = (status["notification"] as? [String: Any])?["variants"] as? [[String: Any]]
            #expect(
                ((shown?.last?["notification"] as? [String: Any])?["alert"] as? [String: Any])?["title"] as? String
                    == "Summer")
            let stored = try await api.database.query(
                "SELECT array_length(variant_payloads, 1), split::text FROM pushes WHERE id = \(UUID(uuidString: id)!)",
                logger: api.logger)
            for try await (count, split) in stored.decode((Int, String).self) {
                #expect(count == 2)
                #expect(PushSplit(json: split)?.variants.map(\.name) == ["short", "long"])
            }

            func refused(_ json: String, field: String, _ comment: Comment? = nil) async throws {
                let answer = try await api.call(.post, "/v1/pushes", key: app.serverKey, json: json)
                #expect(answer.status == .unprocessableContent || answer.status == .badRequest, "\(answer.text)")
                #expect(answer.errorField == field, "\(answer.text)")
            }
            let one = #"{"name":"a","notification":{"alert":{"body":"x"}}}"#
            let two = #"{"name":"b","notification":{"alert":{"body":"y"}}}"#
            try await refused(#"{"audience":{"all":true},"variants":[\#(one)]}"#, field: "variants")
            try await refused(
                #"{"audience":{"all":true},"variants":[\#(one),\#(one)]}"#, field: "variants[1].name")
            try await refused(
                #"{"audience":{"all":true},"notification":{"alert":{"body":"x"}},"variants":[\#(one),\#(two)]}"#,
                field: "variants")
            try await refused(
                #"{"audience":{"all":true},"variants":[\#(one),{"name":"b","notification":{"badge":-1}}]}"#,
                field: "variants[1].notification.badge")
            try await refused(
                #"{"audience":{"all":true},"variants":[\#(one),{"name":"b","notification":{"alert":{"body":"Hi {{name}}"}}}]}"#,
                field: "variants[1].notification")
            try await refused(
                #"{"audience":{"all":true},"variants":[\#(one),{"name":"b","notification":{"silent":true}}]}"#,
                field: "variants[1].notification")
            try await refused(
                #"{"audience":{"all":true},"notification":{"alert":{"body":"x"}},"options":{"holdout":0.7}}"#,
                field: "options.holdout")
            try await refused(
                #"{"audience":{"registration_ids":[1]},"variants":[\#(one),\#(two)]}"#, field: "options.priority_class")
        }
    }

    @Test("events count toward the device's variant; a held-out device's report is refused")
    func engagementPerVariant() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            let tokens = (0..<40).map { _ in APITest.randomToken() }
            var ids: [Int64] = []
            for token in tokens { ids.append(try await api.register(app, token: token)) }
            let id = try #require(
                try await api.call(.post, "/v1/pushes", key: app.serverKey, json: Self.abTest)["id"] as? String)
            let pushID = UUID(uuidString: id)!
            let split = PushSplit(
                variants: [.init(name: "short", weight: 3), .init(name: "long", weight: 1)], holdout: 0.2)
            let assigned = ids.map { split.variant(pushID: pushID, deviceID: $0) }
            // A batch still on its way covers every device's range, the held out included.
            try await api.database.query(
                """
                INSERT INTO push_batches (push_id, sequence, first_device, last_device, target_count, variant)
                VALUES (\(pushID), 0, \(ids.first!), \(ids.last!), 40, 0)
                """, logger: api.logger)
            var opened = [0, 0]
            for (index, variant) in assigned.enumerated() {
                let answer = try await api.call(
                    .post, "/v1/events", key: app.clientKey,
                    json: EngagementAPITests.batch(EngagementAPITests.event(id, tokens[index], "opened")))
                if let variant {
                    #expect(answer.status == .ok, "\(answer.text)")
                    opened[variant] += 1
                } else {
                    #expect(answer.status == .forbidden && answer.errorCode == "not_sent_to_device", "\(answer.text)")
                }
            }
            let status = try await api.call(.get, "/v1/pushes/\(id)", key: app.serverKey)
            let variants = try #require(status["variants"] as? [[String: Any]], "\(status.text)")
            #expect(variants.map { ($0["engagement"] as? [String: Any])?["opened"] as? Int } == opened)
            #expect((status["engagement"] as? [String: Any])?["opened"] as? Int == opened[0] + opened[1])

            // The report as CSV says the same, a line a figure.
            let report = try await api.call(.get, "/v1/pushes/\(id)/report", key: app.serverKey)
            #expect(report.status == .ok && report.headers[.contentType]?.hasPrefix("text/csv") == true)
            let lines = Set(report.text.split(separator: "\r\n").map(String.init))
            #expect(report.text.hasPrefix("scope,metric,value\r\n"), "\(report.text)")
            #expect(lines.contains("push,id,\(id)") && lines.contains("ab_test,holdout,0.2000"))
            #expect(
                lines.contains("variant short,opened,\(opened[0])")
                    && lines.contains("variant long,opened,\(opened[1])"))
            #expect(lines.contains("engagement,opened,\(opened[0] + opened[1])"), "\(report.text)")
            let foreign = try await api.call(
                .get, "/v1/pushes/\(id)/report", key: (try await api.createApp(name: "x")).serverKey)
            #expect(foreign.status == .notFound)
        }
    }

    @Test("winner mode: the operator picks the winner once; a push without winner mode cannot be picked for")
    func pickingTheWinner() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            let other = try await api.createApp(name: "other app")
            let winnerTest = Self.abTest.replacingOccurrences(
                of: #""options":"#, with: #""winner":{"sample":0.25,"wait_seconds":3600},"options":"#)
            let created = try await api.call(.post, "/v1/pushes", key: app.serverKey, json: winnerTest)
            let id = try #require(created["id"] as? String, "\(created.text)")
            var status = try await api.call(.get, "/v1/pushes/\(id)", key: app.serverKey)
            #expect(status["ab_phase"] as? String == "sample" && status["sample"] as? Double == 0.25, "\(status.text)")
            #expect(status["winner"] == nil)

            let foreign = try await api.call(
                .post, "/v1/pushes/\(id)/winner", key: other.serverKey, json: #"{"variant":"long"}"#)
            #expect(foreign.status == .notFound)
            let unknown = try await api.call(
                .post, "/v1/pushes/\(id)/winner", key: app.serverKey, json: #"{"variant":"medium"}"#)
            #expect(unknown.status == .unprocessableContent && unknown.errorField == "variant", "\(unknown.text)")
            let picked = try await api.call(
                .post, "/v1/pushes/\(id)/winner", key: app.serverKey, json: #"{"variant":"long"}"#)
            #expect(picked.status == .ok && picked["winner"] as? String == "long", "\(picked.text)")
            let again = try await api.call(
                .post, "/v1/pushes/\(id)/winner", key: app.serverKey, json: #"{"variant":"short"}"#)
            #expect(again.status == .conflict && again.errorCode == "winner_picked")
            status = try await api.call(.get, "/v1/pushes/\(id)", key: app.serverKey)
            #expect(status["winner"] as? String == "long")

            let plain = try #require(
                try await api.call(.post, "/v1/pushes", key: app.serverKey, json: Self.abTest)["id"] as? String)
            let notWinner = try await api.call(
                .post, "/v1/pushes/\(plain)/winner", key: app.serverKey, json: #"{"variant":"long"}"#)
            #expect(notWinner.status == .conflict && notWinner.errorCode == "not_winner_mode")
            let withoutVariants = try await api.call(
                .post, "/v1/pushes", key: app.serverKey,
                json:
                    #"{"audience":{"all":true},"notification":{"alert":{"body":"x"}},"winner":{"sample":0.1,"wait_seconds":60}}"#
            )
            #expect(withoutVariants.status == .unprocessableContent && withoutVariants.errorField == "winner")
            let expiresFirst = try await api.call(
                .post, "/v1/pushes", key: app.serverKey,
                json: winnerTest.replacingOccurrences(
                    of: #""holdout":0.2"#, with: #""holdout":0.2,"time_to_live_seconds":600"#))
            #expect(
                expiresFirst.status == .unprocessableContent
                    && expiresFirst.errorField == "options.time_to_live_seconds",
                "\(expiresFirst.text)")
        }
    }
}
