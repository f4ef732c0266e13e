import Crypto
import Foundation
import HTTPTypes
import Testing

@testable import HeraldAPI

/// The operations console's sessions and forms against a live herald-api: sign-in, cookies,
/// CSRF, the security headers, sessions that end (sign-out, idle, a revoked key), and sending
/// through the same operations as the Open API.
// Serialized: every sign-in deletes the sessions idle past its server's timeout, in the database
// all tests share — the idle-expiry test's 2 s would end a concurrent test's session mid-way.
@Suite("console: sessions and forms", .serialized)
struct ConsoleTests {
    /// A browser's state: its cookies.
    struct Browser {
        let api: APITest
        var cookies: [String: String] = [:]

        mutating func request(
            _ method: HTTPRequest.Method, _ path: String, form: [String: String]? = nil
        ) async throws -> APITest.Answer {
            var headers = HTTPFields()
            if !cookies.isEmpty {
                headers[.cookie] = cookies.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(
                    separator: "; ")
            }
            let body = form.map { fields in
                fields.map {
                    "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")"
                }
                .joined(separator: "&")
            }
            let answer = try await api.call(
                method, path, key: nil, body: body, contentType: "application/x-www-form-urlencoded", headers: headers)
            for header in answer.headers[values: .setCookie] {
                let pair = header.split(separator: ";")[0].split(separator: "=", maxSplits: 1)
                let name = String(pair[0])
                let value = pair.count > 1 ? String(pair[1]) : ""
                if value.isEmpty || header.contains("Max-Age=0") { cookies[name] = nil } else { cookies[name] = value }
            }
            return answer
        }

        /// The CSRF token a page's forms carry.
        static func csrf(in page: String) -> String? {
            guard let range = page.range(of: #"name="csrf" value=""#) else { return nil }
            return String(page[range.upperBound...].prefix { $0 != "\"" })
        }

        mutating func signIn(_ key: String) async throws -> APITest.Answer {
            let page = try await request(.get, "/console/sign-in")
            return try await request(
                .post, "/console/sign-in", form: ["csrf": Self.csrf(in: page.text) ?? "", "key": key])
        }
    }

    @Test("sign-in: wrong keys and client keys are refused; a server key gets a strict session cookie")
    func signIn() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            var browser = Browser(api: api)
            let page = try await browser.request(.get, "/console/sign-in")
            #expect(page.status == .ok)
            let policy = page.headers[.contentSecurityPolicy] ?? ""
            #expect(policy.contains("default-src 'none'") && policy.contains("script-src 'self'"))
            #expect(!policy.contains("unsafe-inline"))
            #expect(page.headers[HTTPField.Name("X-Frame-Options")!] == "DENY")
            #expect(page.headers[.cacheControl] == "no-store")

            let wrong = try await browser.signIn("hs_" + String(repeating: "x", count: 43))
            #expect(wrong.status == .unauthorized && wrong.text.contains("does not know this key"))
            let client = try await browser.signIn(app.clientKey)
            #expect(client.status == .forbidden && client.text.contains("client key"))
            #expect(browser.cookies["herald_console"] == nil)

            let signedIn = try await browser.signIn(app.serverKey)
            #expect(signedIn.status == .seeOther && signedIn.headers[.location] == "/console/pushes")
            let cookie = try #require(
                signedIn.headers[values: .setCookie].first { $0.hasPrefix("herald_console=") })
            for attribute in ["HttpOnly", "SameSite=Strict", "Secure", "Path=/console"] {
                #expect(cookie.contains(attribute), "\(cookie)")
            }
            let pushes = try await browser.request(.get, "/console/pushes")
            #expect(pushes.status == .ok && pushes.text.contains("Pushes"))
            #expect(!pushes.text.contains(app.serverKey), "the key is never rendered back")

            // A sign-in form without its CSRF token (another site posting it) is refused.
            var stranger = Browser(api: api)
            let forged = try await stranger.request(.post, "/console/sign-in", form: ["key": app.serverKey])
            #expect(forged.status == .forbidden && stranger.cookies["herald_console"] == nil)
            // Before a session, at most 4 KiB of a form are read.
            let huge = try await stranger.request(
                .post, "/console/sign-in", form: ["key": String(repeating: "x", count: 5000)])
            #expect(huge.status == .contentTooLarge)
        }
    }

    @Test("sign-in past the failure limit: further wrong keys answer 429, a valid server key still signs in")
    func signInThrottlesFailuresOnly() async throws {
        try await withAPI(configure: { $0.authenticationFailuresPerMinute = 2 }) { api in
            var browser = Browser(api: api)
            for _ in 0..<2 {
                #expect(try await browser.signIn("hs_" + String(repeating: "y", count: 43)).status == .unauthorized)
            }
            let throttled = try await browser.signIn("hs_" + String(repeating: "z", count: 43))
            #expect(throttled.status == .tooManyRequests && throttled.text.contains("try again in"))
            let app = try await api.createApp()
            let signedIn = try await browser.signIn(app.serverKey)
            #expect(signedIn.status == .seeOther && browser.cookies["herald_console"] != nil, "\(signedIn.text)")
        }
    }

    @Test("compose: the dry run, one push per Idempotency-Key, and forms without the CSRF token refused")
    func compose() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            var browser = Browser(api: api)
            _ = try await browser.signIn(app.serverKey)
            let page = try await browser.request(.get, "/console/compose")
            let csrf = try #require(Browser.csrf(in: page.text))
            let fields = ["csrf": csrf, "audience": "tags", "tags_any": "vip", "title": "Sale", "body": "Today"]

            let empty = try await browser.request(.post, "/console/compose/check", form: fields)
            #expect(empty.status == .ok && empty["ok"] as? Bool == false, "\(empty.text)")
            #expect((empty["error"] as? String)?.contains("No active device") == true)
            _ = try await api.register(app, tags: ["vip"])
            _ = try await api.register(app, tags: ["vip"])
            _ = try await api.register(app, tags: ["news"])
            let checked = try await browser.request(.post, "/console/compose/check", form: fields)
            #expect(checked["ok"] as? Bool == true && checked["audience_size"] as? Int == 2, "\(checked.text)")
            #expect((checked["payload_bytes"] as? Int ?? 0) > 0)

            let invalid = try await browser.request(
                .post, "/console/compose/check", form: fields.merging(["data": "[1]"]) { $1 })
            #expect(invalid["ok"] as? Bool == false && invalid["field"] as? String == "data")

            let noCSRF = try await browser.request(
                .post, "/console/compose/check", form: fields.merging(["csrf": "x"]) { $1 })
            #expect(noCSRF.status == .forbidden)

            let key = UUID().uuidString.lowercased()
            var send = fields
            send["action"] = "send"
            send["idempotency_key"] = key
            let first = try await browser.request(.post, "/console/compose", form: send)
            let again = try await browser.request(.post, "/console/compose", form: send)
            #expect(first.status == .seeOther && first.headers[.location] == again.headers[.location])
            let location = try #require(first.headers[.location])
            let pushID = String(location.dropFirst("/console/pushes/".count).prefix(36))
            let status = try await api.call(.get, "/v1/pushes/\(pushID)", key: app.serverKey)
            #expect(status.status == .ok)
            let list = try await api.call(.get, "/v1/pushes", key: app.serverKey)
            #expect((list["pushes"] as? [[String: Any]])?.count == 1, "a double click sends once")
            let audit = try await api.call(.get, "/v1/apps/\(app.id)/audit-events", key: APITest.adminToken)
            #expect(audit.text.contains("push.created") && audit.text.contains(app.serverKeyID))

            let detail = try await browser.request(.get, location)
            #expect(detail.status == .ok && detail.text.contains(pushID))
            // Every button is on the page (the live script shows the ones that apply as the push
            // moves on); those that do not apply now are hidden.
            #expect(
                detail.text.contains(#"action="/console/pushes/\#(pushID)/cancel" data-action="cancel" data-confirm"#),
                "a running push offers Cancel")
            #expect(detail.text.contains(#"data-action="resume" hidden"#), "a push that is not paused offers no Resume")
            #expect(detail.text.contains(#"id="no-actions" hidden"#))
            let listed = try await browser.request(.get, "/console/pushes")
            #expect(listed.text.contains("/console/pushes/\(pushID)") && !listed.text.contains("No pushes"))
            let cancelWithoutToken = try await browser.request(
                .post, "/console/pushes/\(pushID)/cancel", form: ["confirmed": "1"])
            #expect(cancelWithoutToken.status == .forbidden)
            let unconfirmed = try await browser.request(
                .post, "/console/pushes/\(pushID)/cancel", form: ["csrf": csrf])
            #expect(unconfirmed.status == .ok && unconfirmed.text.contains("Yes, cancel it"))
            let stillThere = try await api.call(.get, "/v1/pushes/\(pushID)", key: app.serverKey)
            #expect(stillThere["state"] as? String != "canceled")
            let canceled = try await browser.request(
                .post, "/console/pushes/\(pushID)/cancel", form: ["csrf": csrf, "confirmed": "1"])
            #expect(canceled.status == .seeOther)
            let after = try await api.call(.get, "/v1/pushes/\(pushID)", key: app.serverKey)
            #expect(after["state"] as? String == "canceled")
        }
    }

    @Test("sessions end: sign-out and the key's revocation")
    func sessionsEnd() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            var browser = Browser(api: api)
            _ = try await browser.signIn(app.serverKey)
            let page = try await browser.request(.get, "/console/pushes")
            let csrf = try #require(Browser.csrf(in: page.text))
            let out = try await browser.request(.post, "/console/sign-out", form: ["csrf": csrf])
            #expect(out.status == .seeOther && browser.cookies["herald_console"] == nil)

            // The old cookie, replayed after sign-out, opens nothing.
            var replay = Browser(api: api)
            _ = try await replay.signIn(app.serverKey)
            let stolen = replay.cookies
            let signOutPage = try await replay.request(.get, "/console/pushes")
            _ = try await replay.request(
                .post, "/console/sign-out", form: ["csrf": Browser.csrf(in: signOutPage.text) ?? ""])
            replay.cookies = stolen
            #expect(try await replay.request(.get, "/console/pushes").status == .seeOther)

            var revoked = Browser(api: api)
            _ = try await revoked.signIn(app.serverKey)
            #expect(try await revoked.request(.get, "/console/pushes").status == .ok)
            let revocation = try await api.call(
                .delete, "/v1/apps/\(app.id)/keys/\(app.serverKeyID)", key: APITest.adminToken)
            #expect(revocation.status == .noContent || revocation.status == .ok, "\(revocation.text)")
            #expect(try await revoked.request(.get, "/console/pushes").status == .seeOther)
        }
    }

    @Test("a session unused for the idle time ends")
    func idleSessionsEnd() async throws {
        try await withAPI(configure: { $0.consoleIdleTimeout = .seconds(2) }) { api in
            let app = try await api.createApp()
            var idle = Browser(api: api)
            _ = try await idle.signIn(app.serverKey)
            #expect(try await idle.request(.get, "/console/pushes").status == .ok)
            // Last used three seconds ago, by PostgreSQL's clock (which judges idleness).
            try await api.database.query(
                """
                UPDATE console_sessions SET last_seen_at = now() - interval '3 seconds'
                WHERE key_id = \(UUID(uuidString: app.serverKeyID)!)
                """, logger: api.logger)
            let expired = try await idle.request(.get, "/console/pushes")
            #expect(expired.status == .seeOther && expired.headers[.location]?.contains("sign-in") == true)
        }
    }

    @Test("the admin creates an app, sees its keys once, makes and revokes a key, uploads a .p8")
    func apps() async throws {
        try await withAPI { api in
            var admin = Browser(api: api)
            let signedIn = try await admin.signIn(APITest.adminToken)
            #expect(signedIn.status == .seeOther && signedIn.headers[.location] == "/console/apps")
            let apps = try await admin.request(.get, "/console/apps")
            let csrf = try #require(Browser.csrf(in: apps.text))
            let bundleID = "com.herald.console.\(UUID().uuidString.prefix(8).lowercased())"
            let created = try await admin.request(
                .post, "/console/apps", form: ["csrf": csrf, "name": "Console app", "bundle_id": bundleID])
            #expect(created.status == .created && created.text.contains("never show them again"))
            let serverKey = try #require(created.text.firstMatch(of: /value="(hs_[A-Za-z0-9_-]{43})"/)?.1)
            #expect(created.text.contains("value=\"hc_") && created.text.contains("value=\"hid_"))
            let appID = try #require(created.text.firstMatch(of: /href="\/console\/apps\/([0-9a-f-]{36})"/)?.1)

            let page = try await admin.request(.get, "/console/apps/\(appID)")
            #expect(page.status == .ok && page.text.contains(bundleID))
            #expect(!page.text.contains("id=\"legacy-mode\""), "a new app has the strict client rules")
            // An app switched back to the rules from before the trust migration says so, loudly.
            let loosened = try await api.call(
                .patch, "/v1/apps/\(appID)", key: APITest.adminToken, json: #"{"legacy_client_access":true}"#)
            #expect(loosened.status == .ok, "\(loosened.text)")
            let legacyPage = try await admin.request(.get, "/console/apps/\(appID)")
            #expect(
                legacyPage.text.contains("id=\"legacy-mode\"")
                    && legacyPage.text.contains("change any device of the app by its registration id"))
            _ = try await api.call(
                .patch, "/v1/apps/\(appID)", key: APITest.adminToken, json: #"{"legacy_client_access":false}"#)
            #expect(!page.text.contains(String(serverKey)), "a key is shown once, never again")
            #expect(page.text.contains(String(serverKey.prefix(8))))

            let newKey = try await admin.request(
                .post, "/console/apps/\(appID)/keys", form: ["csrf": csrf, "kind": "server", "name": "marketing"])
            #expect(newKey.status == .created && newKey.text.contains("value=\"hs_"))
            let keys = try await api.call(.get, "/v1/apps/\(appID)/keys", key: APITest.adminToken)
            let marketing = try #require(
                (keys["keys"] as? [[String: Any]])?.first { $0["name"] as? String == "marketing" })
            let keyID = try #require(marketing["id"] as? String)
            let confirm = try await admin.request(
                .post, "/console/apps/\(appID)/keys/\(keyID)/revoke", form: ["csrf": csrf])
            #expect(confirm.text.contains("Yes, revoke it"))
            let revoked = try await admin.request(
                .post, "/console/apps/\(appID)/keys/\(keyID)/revoke", form: ["csrf": csrf, "confirmed": "1"])
            #expect(revoked.status == .seeOther)
            let after = try await api.call(.get, "/v1/apps/\(appID)/keys", key: APITest.adminToken)
            let revokedKey = (after["keys"] as? [[String: Any]])?.first { $0["id"] as? String == keyID }
            #expect(revokedKey?["revoked_at"] != nil)

            // A .p8 upload, as a browser sends a file: multipart/form-data.
            let p8 = P256.Signing.PrivateKey().pemRepresentation
            let boundary = "----herald\(UUID().uuidString)"
            var body = ""
            for (name, value) in [
                ("csrf", csrf), ("environment", "sandbox"), ("kind", "token"), ("key_id", "ABCDE12345"),
                ("team_id", "TEAM123456"),
            ] {
                body += "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"\r\n\r\n\(value)\r\n"
            }
            body +=
                "--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"AuthKey_ABCDE12345.p8\"\r\n"
            body += "Content-Type: application/octet-stream\r\n\r\n\(p8)\r\n--\(boundary)--\r\n"
            var headers = HTTPFields()
            headers[.cookie] = admin.cookies.map { "\($0.key)=\($0.value)" }.joined(separator: "; ")
            let upload = try await api.call(
                .post, "/console/apps/\(appID)/credentials", key: nil, body: body,
                contentType: "multipart/form-data; boundary=\(boundary)", headers: headers)
            #expect(upload.status == .seeOther, "\(upload.text)")
            let credentials = try await api.call(.get, "/v1/apps/\(appID)/credentials", key: APITest.adminToken)
            #expect(credentials.text.contains("ABCDE12345") && credentials.text.contains("sandbox"))
            let shown = try await admin.request(.get, "/console/apps/\(appID)")
            #expect(shown.text.contains("ABCDE12345 / TEAM123456") && !shown.text.contains("PRIVATE KEY"))

            // A server key of the app has no app pages; another app's admin key cannot open this one.
            var server = Browser(api: api)
            _ = try await server.signIn(String(serverKey))
            #expect(try await server.request(.get, "/console/apps/\(appID)").headers[.location] == "/console/pushes")
        }
    }

    @Test("devices: looked up by alias, registration id, token prefix and tag")
    func devices() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            let token = APITest.randomToken()
            let id = try await api.register(app, token: token, alias: "user-7", tags: ["vip"])
            _ = try await api.register(app, tags: ["news"])
            var browser = Browser(api: api)
            _ = try await browser.signIn(app.serverKey)
            for (by, query) in [
                ("alias", "user-7"), ("id", "\(id)"), ("token", String(token.prefix(9))), ("tag", "vip"),
            ] {
                let page = try await browser.request(.get, "/console/devices?by=\(by)&q=\(query)")
                #expect(page.status == .ok, "\(by)")
                #expect(page.text.contains(">\(id)</td>") && page.text.contains("user-7"), "\(by)")
                #expect(!page.text.contains("No device matches"), "\(by)")
            }
            let none = try await browser.request(
                .get, "/console/devices?by=token&q=\(token.hasPrefix("0000") ? "ffff" : "0000")")
            #expect(none.text.contains("No device matches"))
            let wrong = try await browser.request(.get, "/console/devices?by=token&q=xyz1")
            #expect(wrong.status == .badRequest && wrong.text.contains("hexadecimal"))

            // The same look-up through the Open API.
            let listed = try await api.call(
                .get, "/v1/devices?token_prefix=\(token.prefix(6).uppercased())", key: app.serverKey)
            #expect((listed["devices"] as? [[String: Any]])?.map { $0["registration_id"] as? Int } == [Int(id)])
            let both = try await api.call(.get, "/v1/devices?token_prefix=abcd&tag=vip", key: app.serverKey)
            #expect(both.status == .badRequest && both.errorField == "token_prefix")

            // The kept counts: all devices, then each tag, linked to its look-up; a prefix narrows.
            let counts = try await browser.request(.get, "/console/devices")
            #expect(counts.text.contains("<strong>All devices</strong>"))
            #expect(counts.text.contains(#"<a href="/console/devices?by=tag&amp;q=news">news</a>"#))
            #expect(counts.text.contains(#"<a href="/console/devices?by=tag&amp;q=vip">vip</a>"#))
            let narrowed = try await browser.request(.get, "/console/devices?tag_prefix=v")
            #expect(narrowed.text.contains(">vip</a>") && !narrowed.text.contains(">news</a>"))
            let nothing = try await browser.request(.get, "/console/devices?tag_prefix=zzz")
            #expect(nothing.text.contains("No device carries a tag starting with"))

            // The same counts through the Open API, a page of one tag at a time.
            let first = try await api.call(.get, "/v1/stats/tags?limit=1", key: app.serverKey)
            let firstTags = first["tags"] as? [[String: Any]]
            #expect(firstTags?.map { $0["tag"] as? String } == ["news"] && first["next_cursor"] as? String == "news")
            #expect((firstTags?.first?["devices"] as? [String: Any])?["active"] as? Int == 1)
            let second = try await api.call(.get, "/v1/stats/tags?limit=1&cursor=news", key: app.serverKey)
            #expect((second["tags"] as? [[String: Any]])?.map { $0["tag"] as? String } == ["vip"])
            #expect(second["next_cursor"] == nil)
        }
    }

    @Test("statistics: the timeline per hour and per day, and the page that draws it")
    func statistics() async throws {
        try await withAPI { api in
            let app = try await api.createApp()
            _ = try await api.register(app, tags: ["vip"])
            for _ in 0..<3 {
                let push = try await api.call(
                    .post, "/v1/pushes", key: app.serverKey,
                    json: #"{"audience":{"all":true},"notification":{"alert":{"body":"x"}}}"#)
                #expect(push.status == .accepted)
            }
            for granularity in ["hour", "day"] {
                let stats = try await api.call(.get, "/v1/stats?granularity=\(granularity)", key: app.serverKey)
                let timeline = stats["timeline"] as? [[String: Any]]
                #expect(
                    timeline?.count == 1 && timeline?.first?["pushes"] as? Int == 3, "\(granularity): \(stats.text)")
                let start = (timeline?.first?["start"] as? String) ?? ""
                #expect(start.hasSuffix(granularity == "hour" ? ":00:00Z" : "T00:00:00Z"), "\(start)")
            }
            let plain = try await api.call(.get, "/v1/stats", key: app.serverKey)
            #expect(plain["timeline"] == nil)

            var browser = Browser(api: api)
            _ = try await browser.signIn(app.serverKey)
            for range in ["24h", "7d", "30d", "90d"] {
                let page = try await browser.request(.get, "/console/stats?range=\(range)")
                #expect(
                    page.status == .ok && page.text.contains("<title>") && page.text.contains("3 pushes"), "\(range)")
            }
        }
    }
}
