import Foundation
import HeraldAPNsVocabulary
import HeraldDomain
import HeraldStore
import Testing

@testable import HeraldAPI

/// Personalized and localized pushes through herald-api: what is refused at accept time (and
/// where), what a push stores for the fan-out, and stored templates named by pushes.
@Suite("templates API")
struct TemplatesAPITests {
    static let everyone = #""audience":{"all":true}"#

    @Test(
        "broken, unknown and undefaulted placeholders, bad locales and over-size variants are refused, naming the text")
    func refusals() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            func push(_ body: String) async throws -> APITest.Answer {
                try await api.call(.post, "/v1/pushes", key: app.serverKey, json: body)
            }
            for (notification, field, status) in [
                (#"{"alert":{"title":"Hi {{first_name"}}"#, "notification.alert.title", 422),
                (#"{"alert":{"body":"x","loc_args":["ok","{{nick name}}"]}}"#, "notification.alert.loc_args[1]", 422),
                (#"{"alert":{"body":"Hi {{shoe.size}}"}}"#, "notification.alert.body", 422),
                (#"{"alert":{"body":"Hi {{first_name}}"}}"#, "notification.alert.body", 422),
                (
                    #"{"alert":{"body":"x"},"localizations":{"german":{"body":"y"}}}"#,
                    "notification.localizations.german", 422
                ),
                (
                    #"{"alert":{"body":"x"},"localizations":{"de_AT":{"body":"y"},"DE-at":{"body":"z"}}}"#,
                    "notification.localizations.de_AT", 422
                ),
                (#"{"localizations":{"de":{"body":"y"}}}"#, "notification.alert", 422),
                (
                    #"{"alert":{"body":"short"},"localizations":{"fr":{"body":"\#(String(repeating: "é", count: 2100))"}}}"#,
                    "notification.localizations.fr", 413
                ),
            ] {
                let answer = try await push(#"{\#(Self.everyone),"notification":\#(notification)}"#)
                #expect(answer.status.code == status, "\(notification): \(answer.text)")
                #expect(answer.errorField == field, "\(notification): \(answer.text)")
            }
            // The message says how to fix a missing default.
            let undefaulted = try await push(
                #"{\#(Self.everyone),"notification":{"alert":{"body":"Hi {{first_name}}"}}}"#)
            #expect(undefaulted.text.contains("default") && undefaulted.text.contains("exists"), "\(undefaulted.text)")

            // A placeholder without a default is taken when the audience guarantees the value.
            let guaranteed = try await push(
                #"{"audience":{"filter":{"attribute":"attributes.first_name","op":"exists"}},"notification":{"alert":{"body":"Hi {{first_name}}"}}}"#
            )
            #expect(guaranteed.status == .accepted, "\(guaranteed.text)")
            let aliases = try await push(
                #"{"audience":{"aliases":["u1","u2"]},"notification":{"alert":{"body":"Hi {{alias}}"}}}"#)
            #expect(aliases.status == .accepted, "\(aliases.text)")
            let language = try await push(
                #"{"audience":{"filter":{"and":[{"attribute":"locale","op":"in","value":["de_AT","fr"]}]}},"notification":{"alert":{"body":"{{language}}"}}}"#
            )
            #expect(language.status == .accepted, "\(language.text)")

            // Text without placeholders stays a plain push; {{ in raw aps is not a template.
            let raw = try await push(#"{\#(Self.everyone),"aps":{"alert":"{{not a template"}}"#)
            #expect(raw.status == .accepted, "\(raw.text)")
        }
    }

    @Test(
        "a personalized, localized push stores its template; validate reports its placeholders, languages and largest variant"
    )
    func storedForTheFanout() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            let notification =
                #"{"alert":{"title":"Hi {{first_name | default: \"there\"}}","body":"News"},"localizations":{"de":{"title":"Hallo {{first_name | default: \"du\"}}"},"pt_BR":{"body":"Notícias e mais notícias"}},"sound":"default"}"#
            let validated = try await api.call(
                .post, "/v1/pushes/validate", key: app.serverKey,
                json: #"{\#(Self.everyone),"notification":\#(notification)}"#)
            #expect(validated.status == .ok, "\(validated.text)")
            #expect(validated["placeholders"] as? [String] == ["first_name"])
            #expect(validated["localizations"] as? [String] == ["de", "pt-br"])
            let accepted = try await api.call(
                .post, "/v1/pushes", key: app.serverKey, json: #"{\#(Self.everyone),"notification":\#(notification)}"#)
            #expect(accepted.status == .accepted, "\(accepted.text)")
            let id = try #require(UUID(uuidString: accepted["id"] as? String ?? ""))
            let appID = try #require(UUID(uuidString: app.id))
            let push = try #require(
                try await PushRepository(client: api.database, logger: api.logger).push(
                    id: id, appID: appID))
            let template = try PayloadTemplate(stored: try #require(push.definition.template))
            #expect(template.locales == ["de", "pt-br"] && template.names == ["first_name"])
            let german = template.render(variant: template.variant(forLocale: Array("de_CH".utf8))) { _ in
                Array("Jörg".utf8)[...]
            }
            let object = try JSONSerialization.jsonObject(with: Data(german)) as? [String: Any]
            let aps = object?["aps"] as? [String: Any]
            #expect(aps?["alert"] as? [String: String] == ["title": "Hallo Jörg", "body": "News"])
            #expect(aps?["sound"] as? String == "default")
            // A locale's variant takes what it leaves out from its language's, then the alert's.
            let austrian = try await api.call(
                .post, "/v1/pushes", key: app.serverKey,
                json:
                    #"{\#(Self.everyone),"notification":{"alert":{"title":"Hi","body":"News"},"localizations":{"de":{"body":"Neues"},"de-AT":{"title":"Servus"}}}}"#
            )
            let austrianID = try #require(UUID(uuidString: austrian["id"] as? String ?? ""))
            let austrianPush = try #require(
                try await PushRepository(client: api.database, logger: api.logger).push(id: austrianID, appID: appID))
            let variants = try PayloadTemplate(stored: try #require(austrianPush.definition.template))
            let atPayload = variants.render(variant: variants.variant(forLocale: Array("de_AT".utf8))) { _ in nil }
            #expect(
                String(decoding: atPayload, as: UTF8.self) == #"{"aps":{"alert":{"body":"Neues","title":"Servus"}}}"#)
            // The plain payload is the default variant with defaults.
            #expect(String(decoding: push.definition.payload, as: UTF8.self).contains(#""title":"Hi there""#))
            #expect(
                (validated["payload_bytes"] as? Int ?? 0)
                    == (template.renderedWithDefaults().map(\.count).max() ?? 0) + HeraldPayloadKey.reservedBytes,
                "as sent: with the herald key")
        }
    }

    @Test("stored templates: create, list, get, update, delete; a push names one by template_id and keeps a copy")
    func storedTemplates() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            let other = try await api.createApp()
            let notification =
                #"{"alert":{"title":"Hi {{first_name | default: \"there\"}}","body":"Sale"},"localizations":{"de":{"body":"Rabatt"}}}"#
            let created = try await api.call(
                .post, "/v1/templates", key: app.serverKey,
                json: #"{"name":"sale","description":"weekly","notification":\#(notification)}"#)
            #expect(created.status == .created, "\(created.text)")
            let id = created["id"] as? String ?? ""
            #expect(created["placeholders"] as? [String] == ["first_name"])
            #expect(created["localizations"] as? [String] == ["de"])
            let twice = try await api.call(
                .post, "/v1/templates", key: app.serverKey, json: #"{"name":"sale","notification":\#(notification)}"#)
            #expect(twice.status == .conflict && twice.errorCode == "template_name_taken", "\(twice.text)")
            let broken = try await api.call(
                .post, "/v1/templates", key: app.serverKey,
                json: #"{"name":"broken","notification":{"alert":{"body":"{{oops"}}}"#)
            #expect(broken.status == .unprocessableContent && broken.errorField == "notification.alert.body")

            let list = try await api.call(.get, "/v1/templates", key: app.serverKey)
            #expect((list["templates"] as? [[String: Any]])?.map { $0["name"] as? String } == ["sale"])
            #expect(try await api.call(.get, "/v1/templates/\(id)", key: other.serverKey).status == .notFound)

            // A push by template id; another app's template is not one.
            let byTemplate = try await api.call(
                .post, "/v1/pushes", key: app.serverKey, json: #"{\#(Self.everyone),"template_id":"\#(id)"}"#)
            #expect(byTemplate.status == .accepted, "\(byTemplate.text)")
            let foreign = try await api.call(
                .post, "/v1/pushes", key: other.serverKey, json: #"{\#(Self.everyone),"template_id":"\#(id)"}"#)
            #expect(foreign.status == .unprocessableContent && foreign.errorField == "template_id", "\(foreign.text)")
            let both = try await api.call(
                .post, "/v1/pushes", key: app.serverKey,
                json: #"{\#(Self.everyone),"template_id":"\#(id)","notification":{"alert":{"body":"x"}}}"#)
            #expect(both.status == .unprocessableContent && both.errorField == "template_id", "\(both.text)")

            // Changing and deleting the template leaves the accepted push as it was.
            let updated = try await api.call(
                .patch, "/v1/templates/\(id)", key: app.serverKey,
                json: #"{"notification":{"alert":{"body":"Changed {{alias | default: \"\"}}"}}}"#)
            #expect(updated.status == .ok && updated["placeholders"] as? [String] == ["alias"], "\(updated.text)")
            #expect(try await api.call(.delete, "/v1/templates/\(id)", key: app.serverKey).status == .noContent)
            #expect(try await api.call(.get, "/v1/templates/\(id)", key: app.serverKey).status == .notFound)
            let pushID = try #require(UUID(uuidString: byTemplate["id"] as? String ?? ""))
            let appID = try #require(UUID(uuidString: app.id))
            let push = try #require(
                try await PushRepository(client: api.database, logger: api.logger).push(
                    id: pushID, appID: appID))
            let template = try PayloadTemplate(stored: try #require(push.definition.template))
            #expect(template.locales == ["de"] && template.names == ["first_name"])
            #expect(push.definition.notificationJSON.contains("Sale"))
        }
    }
}
