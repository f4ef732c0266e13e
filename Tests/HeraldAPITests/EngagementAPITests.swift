import Foundation
import HTTPTypes
import HeraldStore
import PostgresNIO
import Testing

@testable import HeraldAPI

@Suite("Open API: engagement events")
struct EngagementAPITests {
    /// An event of the batches below, as JSON.
    static func event(
        _ push: String, _ token: String, _ type: String, action: String? = nil, textInput: Bool? = nil,
        at date: Date = Date()
    ) -> String {
        var fields = [
            #""push_id":"\#(push)""#, #""token":"\#(token)""#, #""type":"\#(type)""#,
            #""occurred_at":"\#(date.formatted(.iso8601))""#,
        ]
        if let action { fields.append(#""action":"\#(action)""#) }
        if let textInput { fields.append(#""text_input":\#(textInput)"#) }
        return "{" + fields.joined(separator: ",") + "}"
    }

    static func batch(_ events: String...) -> String { #"{"events":[\#(events.joined(separator: ","))]}"# }

    @Test(
        "a device reports once per push, type and action, only for pushes it was sent, a batch whole or not at all; the push's status counts it"
    )
    func eventsAreCountedOnceAndOnlyForTheirDevice() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            let other = try await api.createApp(name: "other app")
            let tokens = (0..<4).map { _ in APITest.randomToken() }
            var ids: [Int64] = []
            for token in tokens { ids.append(try await api.register(app, token: token)) }
            let hello = #"{"audience":{"all":true},"notification":{"alert":{"body":"Hello"}}}"#
            let push = try #require(
                try await api.call(.post, "/v1/pushes", key: app.serverKey, json: hello)["id"] as? String)
            let stillSending = try #require(
                try await api.call(.post, "/v1/pushes", key: app.serverKey, json: hello)["id"] as? String)
            let othersPush = try #require(
                try await api.call(.post, "/v1/pushes", key: other.serverKey, json: hello)["id"] as? String)
            // What herald-center writes as the fan-out and its outcomes go: the push's batch
            // covers the four devices; APNs accepted the first, the gateway delivered the second,
            // the third was rejected and the fourth skipped. The second push's batch (the first
            // device alone) is still on its way.
            try await api.database.query(
                """
                INSERT INTO push_batches (push_id, sequence, first_device, last_device, target_count, completed_at,
                                          accepted_device_ids, delivered_online_device_ids)
                VALUES (\(UUID(uuidString: push)!), 0, \(ids[0]), \(ids[3]), 4, now(), ARRAY[\(ids[0])]::bigint[], ARRAY[\(ids[1])]::bigint[]),
                       (\(UUID(uuidString: stillSending)!), 0, \(ids[0]), \(ids[0]), 1, NULL, NULL, NULL)
                """, logger: api.logger)
            try await api.database.query(
                """
                INSERT INTO push_counters (push_id, targeted, accepted, delivered_online, rejected)
                VALUES (\(UUID(uuidString: push)!), 4, 1, 1, 1)
                ON CONFLICT (push_id) DO UPDATE SET targeted = 4, accepted = 1, delivered_online = 1, rejected = 1
                """, logger: api.logger)

            // The phone of the first device: its extension, then the user.
            let first = Self.batch(
                Self.event(push, tokens[0], "received"), Self.event(push, tokens[0], "opened"),
                Self.event(push, tokens[0], "action", action: "reply", textInput: true),
                Self.event(push, tokens[0], "dismissed"))
            let stored = try await api.call(.post, "/v1/events", key: app.clientKey, json: first)
            #expect(stored.status == .ok, "\(stored.text)")
            #expect(
                stored["received"] as? Int == 4 && stored["counted"] as? Int == 4 && stored["duplicates"] as? Int == 0)
            // The same batch again (the SDK did not hear the answer): nothing more is counted.
            let again = try await api.call(.post, "/v1/events", key: app.clientKey, json: first)
            #expect(again.status == .ok && again["counted"] as? Int == 0 && again["duplicates"] as? Int == 4)
            // The device reached online opens it too, reported by the app's back-end; twice in one batch.
            let online = try await api.call(
                .post, "/v1/events", key: app.serverKey,
                json: Self.batch(Self.event(push, tokens[1], "opened"), Self.event(push, tokens[1], "opened")))
            #expect(online.status == .ok && online["counted"] as? Int == 1 && online["duplicates"] as? Int == 1)

            // The rejected device was not sent the push: the batch naming it stores nothing.
            let mixed = try await api.call(
                .post, "/v1/events", key: app.serverKey,
                json: Self.batch(Self.event(push, tokens[1], "dismissed"), Self.event(push, tokens[2], "opened")))
            #expect(mixed.status == .forbidden && mixed.errorCode == "not_sent_to_device", "\(mixed.text)")
            #expect(mixed.errorField == "events[1]")
            let skipped = try await api.call(
                .post, "/v1/events", key: app.clientKey, json: Self.batch(Self.event(push, tokens[3], "received")))
            #expect(skipped.status == .forbidden && skipped.errorCode == "not_sent_to_device")
            // A batch still on its way counts every device of its range.
            let early = try await api.call(
                .post, "/v1/events", key: app.clientKey,
                json: Self.batch(Self.event(stillSending, tokens[0], "received")))
            #expect(early.status == .ok && early["counted"] as? Int == 1, "\(early.text)")

            // Another app's push, a token nobody registered.
            let foreign = try await api.call(
                .post, "/v1/events", key: app.clientKey, json: Self.batch(Self.event(othersPush, tokens[0], "opened")))
            #expect(foreign.status == .notFound && foreign.errorField == "events[0].push_id")
            let stranger = try await api.call(
                .post, "/v1/events", key: app.serverKey,
                json: Self.batch(
                    Self.event(push, tokens[0], "opened"), Self.event(push, APITest.randomToken(), "opened")))
            #expect(stranger.status == .notFound && stranger.errorField == "events[1].token")
            // The other app cannot report about this app's push, nor read its counts.
            let crossed = try await api.call(
                .post, "/v1/events", key: other.clientKey, json: Self.batch(Self.event(push, tokens[0], "opened")))
            #expect(crossed.status == .notFound)

            // The push's status: the first device's four events, the second's open; nothing of the refused batches.
            let status = try await api.call(.get, "/v1/pushes/\(push)", key: app.serverKey)
            let engagement = try #require(status["engagement"] as? [String: Any], "\(status.text)")
            #expect(engagement["reached"] as? Int == 2)
            #expect(engagement["received"] as? Int == 1 && engagement["opened"] as? Int == 2)
            #expect(engagement["dismissed"] as? Int == 1)
            #expect((engagement["actions"] as? [String: Any])?["reply"] as? Int == 1)
            #expect(engagement["open_rate"] as? Double == 1.0 && engagement["received_rate"] as? Double == 0.5)
            // What the push said, as accepted.
            let notification = status["notification"] as? [String: Any]
            #expect((notification?["alert"] as? [String: Any])?["body"] as? String == "Hello", "\(status.text)")
            // The day's statistics count them beside the day's deliveries.
            let stats = try await api.call(.get, "/v1/stats?granularity=day", key: app.serverKey)
            let today = (stats["timeline"] as? [[String: Any]])?.last
            #expect(today?["opened"] as? Int == 2 && today?["received"] as? Int == 2, "\(stats.text)")
            let othersStatus = try await api.call(.get, "/v1/pushes/\(push)", key: other.serverKey)
            #expect(othersStatus.status == .notFound)

            // Batches overlap (a thin series' batch spans a long range beside a dense series): the
            // device's batch is found however many batches end between it and its batch's end.
            let overlapping = try #require(
                try await api.call(.post, "/v1/pushes", key: app.serverKey, json: hello)["id"] as? String)
            let overlappingID = UUID(uuidString: overlapping)!
            try await api.database.query(
                """
                INSERT INTO push_batches (push_id, sequence, first_device, last_device, target_count, completed_at,
                                          accepted_device_ids, delivered_online_device_ids)
                SELECT \(overlappingID), k, \(ids[0]) + k, \(ids[0]) + k, 1, now(), '{}'::bigint[], NULL::bigint[]
                FROM generate_series(1, 200) k
                UNION ALL
                SELECT \(overlappingID), 0, \(ids[0]) - 10, \(ids[0]) + 100000, 1, now(), ARRAY[\(ids[0])]::bigint[], NULL
                """, logger: api.logger)
            // The device names 25 actions at once, then one more: the counts name the first batch's,
            // and count the later one under "(other)".
            let actions = (1...25).map { Self.event(overlapping, tokens[0], "action", action: "choice.\($0)") }
            let many = try await api.call(
                .post, "/v1/events", key: app.clientKey, json: #"{"events":[\#(actions.joined(separator: ","))]}"#)
            #expect(many.status == .ok && many["counted"] as? Int == 25, "\(many.text)")
            let late = try await api.call(
                .post, "/v1/events", key: app.clientKey,
                json: Self.batch(Self.event(overlapping, tokens[0], "action", action: "late-choice")))
            #expect(late.status == .ok && late["counted"] as? Int == 1, "\(late.text)")
            let named = try await api.call(.get, "/v1/pushes/\(overlapping)", key: app.serverKey)
            let namedActions = (named["engagement"] as? [String: Any])?["actions"] as? [String: Any] ?? [:]
            #expect(
                namedActions.count == 26 && namedActions["(other)"] as? Int == 1 && namedActions["late-choice"] == nil,
                "\(named.text)")

            let metrics = try await api.call(.get, "/metrics", key: nil)
            #expect(
                metrics.text.contains(#"herald_api_engagement_events_total{result="counted"} 32"#), "\(metrics.text)")
        }
    }

    @Test("a malformed event is refused with the field that names it")
    func malformedEventsSayWhatToFix() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            let token = APITest.randomToken()
            let other = APITest.randomToken()
            _ = try await api.register(app, token: token)
            let push = UUID().uuidString.lowercased()
            let longAgo = Date().addingTimeInterval(-8 * 24 * 3600)
            let cases: [(String, String, HTTPResponse.Status, String, String)] = [
                (#"{"events":[]}"#, app.serverKey, .unprocessableContent, "events", "invalid_value"),
                (
                    Self.batch(Self.event(push, token, "opened", at: longAgo)), app.serverKey, .unprocessableContent,
                    "events[0].occurred_at", "event_too_old"
                ),
                (
                    Self.batch(Self.event(push, token, "opened", at: Date().addingTimeInterval(3600))), app.serverKey,
                    .unprocessableContent, "events[0].occurred_at", "invalid_value"
                ),
                (
                    Self.batch(Self.event(push, token, "action")), app.serverKey, .unprocessableContent,
                    "events[0].action", "invalid_value"
                ),
                (
                    Self.batch(Self.event(push, token, "opened", action: "reply")), app.serverKey,
                    .unprocessableContent, "events[0].action", "invalid_value"
                ),
                (
                    Self.batch(Self.event("not-a-push", token, "opened")), app.serverKey, .badRequest,
                    "events[0].push_id", "invalid_request"
                ),
                (
                    Self.batch(Self.event(push, token, "opened"), Self.event(push, other, "opened")), app.clientKey,
                    .unprocessableContent, "events[1].token", "invalid_value"
                ),
                (
                    #"{"events":[\#(Array(repeating: Self.event(push, token, "opened"), count: 501).joined(separator: ","))]}"#,
                    app.serverKey, .unprocessableContent, "events", "invalid_value"
                ),
            ]
            for (body, key, status, field, code) in cases {
                let answer = try await api.call(.post, "/v1/events", key: key, json: body)
                #expect(
                    answer.status == status && answer.errorField == field && answer.errorCode == code, "\(answer.text)")
            }
            let unknownType = try await api.call(
                .post, "/v1/events", key: app.serverKey, json: Self.batch(Self.event(push, token, "liked")))
            #expect(unknownType.status == .badRequest, "\(unknownType.text)")
            for action in ["", String(repeating: "a", count: 65), "re ply", "répondre"] {
                let refused = try await api.call(
                    .post, "/v1/events", key: app.serverKey,
                    json: Self.batch(Self.event(push, token, "action", action: action)))
                #expect(
                    refused.status == .unprocessableContent && refused.errorField == "events[0].action",
                    "\(refused.text)")
            }
        }
    }

    @Test(
        "the authorization status a device reports is kept, shown, changed by token, filtered on by segments; skip_unauthorized goes with alert pushes"
    )
    func authorizationStatus() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            let token = APITest.randomToken()
            let registered = try await api.call(
                .post, "/v1/devices", key: app.clientKey,
                json: #"{"token":"\#(token)","environment":"production","authorization_status":"provisional"}"#)
            #expect(registered.status == .created && registered["authorization_status"] as? String == "provisional")
            // A registration that does not say keeps it; a change by token replaces it.
            let again = try await api.call(
                .post, "/v1/devices", key: app.clientKey, json: #"{"token":"\#(token)","environment":"production"}"#)
            #expect(again["authorization_status"] as? String == "provisional", "\(again.text)")
            let denied = try await api.call(
                .patch, "/v1/devices/by-token/\(token)", key: app.clientKey, json: #"{"authorization_status":"denied"}"#
            )
            #expect(denied.status == .ok && denied["authorization_status"] as? String == "denied", "\(denied.text)")
            let wrong = try await api.call(
                .patch, "/v1/devices/by-token/\(token)", key: app.clientKey, json: #"{"authorization_status":"maybe"}"#)
            #expect(wrong.status == .badRequest, "\(wrong.text)")
            _ = try await api.register(app)

            // Segments: one device has notifications denied, one never said.
            let deniedOnly = #"{"attribute":"authorization_status","op":"eq","value":"denied"}"#
            let validated = try await api.call(
                .post, "/v1/pushes/validate", key: app.serverKey,
                json: #"{"audience":{"filter":\#(deniedOnly)},"notification":{"alert":{"body":"x"}}}"#)
            #expect(validated.status == .ok && validated["audience_size"] as? Int == 1, "\(validated.text)")

            let background = try await api.call(
                .post, "/v1/pushes", key: app.serverKey,
                json: #"{"audience":{"all":true},"notification":{"silent":true},"options":{"skip_unauthorized":true}}"#)
            #expect(background.status == .unprocessableContent && background.errorField == "options.skip_unauthorized")
            let alert = try await api.call(
                .post, "/v1/pushes", key: app.serverKey,
                json:
                    #"{"audience":{"all":true},"notification":{"alert":{"body":"x"}},"options":{"skip_unauthorized":true}}"#
            )
            #expect(alert.status == .accepted, "\(alert.text)")

            // An import carries it too, as NDJSON and as a CSV column; a line without it keeps it.
            let imported = [APITest.randomToken(), APITest.randomToken()]
            let ndjson = try await api.call(
                .post, "/v1/devices/import", key: app.serverKey,
                body: #"{"token":"\#(imported[0])","environment":"production","authorization_status":"denied"}"# + "\n"
                    + #"{"token":"\#(token)","environment":"production"}"# + "\n",
                contentType: "application/x-ndjson")
            #expect(ndjson.status == .ok && ndjson["accepted"] as? Int == 2, "\(ndjson.text)")
            let csv = try await api.call(
                .post, "/v1/devices/import", key: app.serverKey,
                body: "token,environment,authorization_status\n\(imported[1]),production,ephemeral\n",
                contentType: "text/csv")
            #expect(csv.status == .ok && csv["accepted"] as? Int == 1, "\(csv.text)")
            for (device, expected) in [(imported[0], "denied"), (imported[1], "ephemeral"), (token, "denied")] {
                let shown = try await api.call(.get, "/v1/devices/by-token/\(device)", key: app.serverKey)
                #expect(shown["authorization_status"] as? String == expected, "\(shown.text)")
            }
            let badCSV = try await api.call(
                .post, "/v1/devices/import", key: app.serverKey,
                body: "token,environment,authorization_status\n\(APITest.randomToken()),production,sometimes\n",
                contentType: "text/csv")
            #expect(badCSV["accepted"] as? Int == 0 && badCSV["rejected"] as? Int == 1, "\(badCSV.text)")
            #expect(badCSV.text.contains("authorization_status"), "\(badCSV.text)")
        }
    }
}

@Suite("Open API: engagement webhooks")
struct EngagementWebhookTests {
    @Test(
        "engagement.batch carries the events counted now, a push each; push.engagement comes once a push when its mark is due, with the totals"
    )
    func engagementWebhooks() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            let hook = try await api.call(
                .post, "/v1/apps/\(app.id)/webhooks", key: APITest.adminToken,
                json:
                    #"{"url":"https://hooks.example.com/engagement","event_types":["push.engagement","engagement.batch"]}"#
            )
            #expect(hook.status == .created, "\(hook.text)")
            let tokens = (0..<3).map { _ in APITest.randomToken() }
            var ids: [Int64] = []
            for token in tokens { ids.append(try await api.register(app, token: token)) }
            let hello = #"{"audience":{"all":true},"notification":{"alert":{"body":"Hello"}}}"#
            let push = try #require(
                try await api.call(.post, "/v1/pushes", key: app.serverKey, json: hello)["id"] as? String)
            let pushID = UUID(uuidString: push)!
            try await api.database.query(
                """
                INSERT INTO push_batches (push_id, sequence, first_device, last_device, target_count, completed_at,
                                          accepted_device_ids)
                VALUES (\(pushID), 0, \(ids[0]), \(ids[2]), 3, now(), ARRAY[\(ids[0]), \(ids[1]), \(ids[2])]::bigint[])
                """, logger: api.logger)
            try await api.database.query(
                "UPDATE push_counters SET targeted = 3, accepted = 3 WHERE push_id = \(pushID)", logger: api.logger)
            for (index, token) in tokens.enumerated() {
                var events = [EngagementAPITests.event(push, token, "received")]
                if index < 2 { events.append(EngagementAPITests.event(push, token, "opened")) }
                if index == 0 {
                    events.append(EngagementAPITests.event(push, token, "action", action: "reply", textInput: true))
                }
                let batch = #"{"events":[\#(events.joined(separator: ","))]}"#
                let answer = try await api.call(.post, "/v1/events", key: app.clientKey, json: batch)
                #expect(answer.status == .ok, "\(answer.text)")
                // The same batch again counts nothing, and writes no webhook event.
                _ = try await api.call(.post, "/v1/events", key: app.clientKey, json: batch)
            }

            func events(_ type: String) async throws -> [[String: Any]] {
                let rows = try await api.database.query(
                    "SELECT data::text FROM webhook_events WHERE app_id = \(UUID(uuidString: app.id)!) AND type = \(type) ORDER BY created_at",
                    logger: api.logger)
                var found: [[String: Any]] = []
                for try await data in rows.decode(String.self) {
                    found.append(
                        try #require(try JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any]))
                }
                return found
            }
            // One engagement.batch per batch that counted something: three, with 3, 2 and 1 events.
            let batches = try await events("engagement.batch")
            #expect(batches.map { ($0["events"] as? [Any])?.count } == [3, 2, 1])
            let first = try #require(
                (batches.first?["events"] as? [[String: Any]])?.first { $0["type"] as? String == "action" })
            #expect(first["registration_id"] as? Int64 == ids[0] && first["action"] as? String == "reply")
            #expect(first["text_input"] as? Bool == true && batches.first?["push_id"] as? String == push)

            // push.engagement waits for its mark's minute: nothing yet, then one with the totals.
            let repository = WebhookRepository(client: api.database, logger: api.logger)
            #expect(try await repository.writeDueEngagementEvents() == 0)
            #expect(try await events("push.engagement").isEmpty)
            try await api.database.query(
                "UPDATE push_engagement_reports SET due_at = now() WHERE push_id = \(pushID)", logger: api.logger)
            #expect(try await repository.writeDueEngagementEvents() == 1)
            #expect(try await repository.writeDueEngagementEvents() == 0)
            let totals = try #require(try await events("push.engagement").first?["engagement"] as? [String: Any])
            #expect(totals["reached"] as? Int == 3 && totals["received"] as? Int == 3 && totals["opened"] as? Int == 2)
            #expect((totals["actions"] as? [String: Any])?["reply"] as? Int == 1)
            #expect(totals["open_rate"] as? Double == 0.6667, "\(totals)")
        }
    }
}
