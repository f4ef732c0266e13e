import Foundation
import HeraldKit
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The running Herald these tests talk to: `herald dev up` started by scripts/test-heraldkit.sh,
/// which passes its addresses in the environment (`herald dev env`'s names). Without them the
/// tests are skipped — unless HERALDKIT_REQUIRE_STACK is set (as the script sets it), when they
/// fail.
struct Stack: Sendable {
    let apiURL: URL
    let adminToken: String
    let gateway: GatewayEndpoint

    static let current: Stack? = {
        let environment = ProcessInfo.processInfo.environment
        guard let api = environment["HERALD_API_URL"].flatMap(URL.init(string:)),
            let admin = environment["HERALD_ADMIN_TOKEN"],
            let address = environment["HERALD_DEV_GATEWAY"], let colon = address.lastIndex(of: ":"),
            let port = Int(address[address.index(after: colon)...]),
            let caPath = environment["HERALD_DEV_GATEWAY_CA"],
            let ca = try? String(contentsOfFile: caPath, encoding: .utf8)
        else { return nil }
        return Stack(
            apiURL: api, adminToken: admin,
            gateway: GatewayEndpoint(
                host: String(address[..<colon]), port: port, trustedCertificatesPEM: ca, serverName: "localhost"))
    }()

    static var isWanted: Bool {
        current != nil || ProcessInfo.processInfo.environment["HERALDKIT_REQUIRE_STACK"] != nil
    }

    /// An answer of herald-api, as JSON.
    struct Answer: @unchecked Sendable {
        var status: Int
        var json: [String: Any]
        subscript(key: String) -> Any? { json[key] }
    }

    /// Calls herald-api as an operator or the app's back-end would.
    func call(_ method: String, _ path: String, key: String, json: String? = nil) async throws -> Answer {
        var request = URLRequest(url: URL(string: apiURL.absoluteString + path)!)
        request.httpMethod = method
        request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization")
        if let json {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(json.utf8)
        }
        let (data, response) = try await URLSession.shared.data(for: request)
        let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
        return Answer(status: (response as? HTTPURLResponse)?.statusCode ?? 0, json: object)
    }

    /// A new app of its own for a test, with its keys and identity secret, and `client_tags`.
    struct App: Sendable {
        var id: String
        var serverKey: String
        var clientKey: String
        var identitySecret: String
        var bundleID: String
    }

    func createApp(clientTags: [String] = []) async throws -> App {
        let bundle = "com.heraldkit.test.\(UUID().uuidString.prefix(8).lowercased())"
        let created = try await call(
            "POST", "/v1/apps", key: adminToken, json: #"{"name":"HeraldKit test","bundle_id":"\#(bundle)"}"#)
        #expect(created.status == 201, "\(created.json)")
        let app = App(
            id: (created["app"] as? [String: Any])?["id"] as? String ?? "",
            serverKey: (created["server_key"] as? [String: Any])?["key"] as? String ?? "",
            clientKey: (created["client_key"] as? [String: Any])?["key"] as? String ?? "",
            identitySecret: created["identity_secret"] as? String ?? "",
            bundleID: bundle)
        try await storeDevelopmentCredential(appID: app.id)
        if !clientTags.isEmpty {
            let tags = clientTags.map { "\"\($0)\"" }.joined(separator: ",")
            let patched = try await call(
                "PATCH", "/v1/apps/\(app.id)", key: adminToken, json: #"{"client_tags":[\#(tags)]}"#)
            #expect(patched.status == 200, "\(patched.json)")
        }
        return app
    }

    /// Gives the app the dev stack's APNs token key (what `herald app credentials --dev-stack-key`
    /// does), so its pushes may also take the APNs road, as a real app's do.
    func storeDevelopmentCredential(appID: String) async throws {
        guard let directory = ProcessInfo.processInfo.environment["HERALD_DEV_DIR"],
            let data = FileManager.default.contents(atPath: directory + "/stack.json"),
            let stack = try JSONSerialization.jsonObject(with: data) as? [String: Any],
            let key = stack["signingKey"] as? [String: Any], let file = key["privateKeyFile"] as? String,
            let keyID = key["keyID"] as? String, let teamID = key["teamID"] as? String
        else {
            Issue.record("no signing key in HERALD_DEV_DIR/stack.json")
            return
        }
        let body = try JSONSerialization.data(withJSONObject: [
            "kind": "token", "key_id": keyID, "team_id": teamID,
            "private_key": try String(contentsOfFile: file, encoding: .utf8),
        ])
        let stored = try await call(
            "PUT", "/v1/apps/\(appID)/credentials/sandbox", key: adminToken, json: String(decoding: body, as: UTF8.self)
        )
        #expect(stored.status == 200, "\(stored.json)")
    }

    /// A notification apns-sim accepted (a line of its admin port's `GET /notifications`).
    struct APNsCopy: @unchecked Sendable {
        var collapseID: String?
        var pushType: String
        var priority: Int
        var payload: [String: Any]
        /// The payload as an app's `userInfo` holds it.
        var userInfo: [AnyHashable: Any] { payload }
    }

    /// apns-sim's admin address (`HERALD_DEV_APNS_SIM_ADMIN`).
    static func apnsSimAdmin() throws -> String {
        try #require(
            ProcessInfo.processInfo.environment["HERALD_DEV_APNS_SIM_ADMIN"], "HERALD_DEV_APNS_SIM_ADMIN names apns-sim"
        )
    }

    /// Tells apns-sim that `token` is a real device of the app (APNs answers BadDeviceToken for
    /// any other), as a phone's APNs registration would.
    func registerWithAPNs(token: String, app: App) async throws {
        var request = URLRequest(url: try #require(URL(string: "\(try Self.apnsSimAdmin())/devices")))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = try JSONSerialization.data(withJSONObject: [
            "devices": [["token": token.lowercased(), "topic": app.bundleID]]
        ])
        let (data, response) = try await URLSession.shared.data(for: request)
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        #expect((200..<300).contains(status), "apns-sim refused the device: \(String(decoding: data, as: UTF8.self))")
    }

    /// Waits for apns-sim (`HERALD_DEV_APNS_SIM_ADMIN`) to hold a notification for `token`
    /// whose payload `matches`, and returns it.
    func apnsCopy(
        token: String, _ what: String, matches: @escaping @Sendable ([String: Any]) -> Bool
    ) async throws -> APNsCopy {
        let url = try #require(URL(string: "\(try Self.apnsSimAdmin())/notifications?token=\(token.lowercased())"))
        let found = Found()
        try await Self.eventually(60, what) {
            let (data, _) = try await URLSession.shared.data(from: url)
            for line in data.split(separator: UInt8(ascii: "\n")) {
                guard let entry = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
                    let text = entry["payload"] as? String,
                    let payload = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
                    matches(payload)
                else { continue }
                found.copy = APNsCopy(
                    collapseID: entry["collapseID"] as? String, pushType: entry["pushType"] as? String ?? "",
                    priority: (entry["priority"] as? NSNumber)?.intValue ?? 0, payload: payload)
                return true
            }
            return false
        }
        return try #require(found.copy)
    }

    private final class Found: @unchecked Sendable { var copy: APNsCopy? }

    /// Waits until `condition` holds, checking every 100 ms, at most `seconds`.
    static func eventually(
        _ seconds: Double = 60, _ what: String, condition: @Sendable () async throws -> Bool
    ) async throws {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        Issue.record("not within \(seconds) s: \(what)")
        throw Timeout()
    }

    struct Timeout: Error {}
}

/// The app's back-end as the test plays it: signs (token, alias) under the app's identity secret
/// (docs/security.md, v2) with the openssl command, as a back-end in any language would.
enum BackEnd {
    /// The app's alias signer when its back-end signs under the app's identity secret.
    static func signer(for app: Stack.App) -> HeraldClient.AliasSigner {
        let secret = app.identitySecret
        return { token, alias in try sign(alias: alias, token: token, secret: secret) }
    }

    static func sign(alias: String, token: String, secret: String, expiresIn: Int = 3600) throws -> String {
        let expires = Int(Date().timeIntervalSince1970) + expiresIn
        let message = "herald-alias-v2\n\(token.lowercased())\n\(alias)\n\(expires)"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl", "dgst", "-sha256", "-hmac", secret, "-r"]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        input.fileHandleForWriting.write(Data(message.utf8))
        try input.fileHandleForWriting.close()
        let digest = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return "v2.\(expires)." + (digest.split(separator: " ").first.map(String.init) ?? "")
    }
}

/// A random 32-byte device token.
func randomToken() -> [UInt8] { (0..<32).map { _ in UInt8.random(in: 0...255) } }
