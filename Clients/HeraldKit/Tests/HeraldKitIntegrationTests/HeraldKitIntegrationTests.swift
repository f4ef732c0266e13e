import Foundation
import HeraldKit
import HeraldKitURLSession
import Testing

/// HeraldKit against a real herald-api and herald-gateway (`herald dev up`, started by
/// scripts/test-heraldkit.sh): what an app does with the SDK, checked on the server's side.
@Suite("HeraldKit against the running services", .enabled(if: Stack.isWanted), .serialized)
struct HeraldKitIntegrationTests {
    static func client(
        _ stack: Stack, _ app: Stack.App, storage: any HeraldStorage, center: InMemoryNotificationCenter,
        apiURL: URL? = nil, signer: HeraldClient.AliasSigner? = nil
    ) -> HeraldClient {
        HeraldClient(
            configuration: HeraldConfiguration(
                apiURL: apiURL ?? stack.apiURL, clientKey: app.clientKey, gateway: stack.gateway,
                environment: "sandbox", agent: "HeraldKit integration test"),
            notificationCenter: center, storage: storage, aliasSigner: signer)
    }

    static func devices(_ stack: Stack, _ app: Stack.App, alias: String) async throws -> [[String: Any]] {
        let answer = try await stack.call("GET", "/v1/devices?alias=\(alias)", key: app.serverKey)
        return answer["devices"] as? [[String: Any]] ?? []
    }

    /// A phone of a new app, as an app sets itself up: registered with `token`, its alias bound
    /// with the signature the app's back-end makes.
    static func phone(
        _ stack: Stack, alias: String, token: [UInt8] = randomToken(), storage: any HeraldStorage = InMemoryStorage()
    ) async throws -> (app: Stack.App, center: InMemoryNotificationCenter, client: HeraldClient) {
        let app = try await stack.createApp()
        let center = InMemoryNotificationCenter()
        let client = Self.client(stack, app, storage: storage, center: center, signer: BackEnd.signer(for: app))
        try await client.register(deviceToken: token)
        try await client.bind(alias: alias)
        return (app, center, client)
    }

    @Test("register, bind a signed alias (a forged one fails), add tags, rotate the token")
    func registration() async throws {
        let stack = try #require(
            Stack.current, "HERALD_API_URL, HERALD_ADMIN_TOKEN and HERALD_DEV_GATEWAY(_CA) name the stack")
        let app = try await stack.createApp(clientTags: ["news"])
        let storage = InMemoryStorage()
        let client = Self.client(
            stack, app, storage: storage, center: InMemoryNotificationCenter(),
            signer: BackEnd.signer(for: app))
        let first = randomToken()
        let registered = try await client.register(deviceToken: first)
        #expect(registered.tokenPrefix == String(hexadecimal(first).prefix(8)))
        #expect(await client.deviceToken == hexadecimal(first))

        try await client.bind(alias: "kit-user")
        #expect(try await Self.devices(stack, app, alias: "kit-user").count == 1)

        let forger = Self.client(
            stack, app, storage: InMemoryStorage(), center: InMemoryNotificationCenter(),
            signer: { token, alias in try BackEnd.sign(alias: alias, token: token, secret: "hid_guessed") })
        try await forger.register(deviceToken: randomToken())
        await #expect(throws: HeraldAPIError.self) { try await forger.bind(alias: "kit-user") }
        do {
            try await forger.bind(alias: "kit-user")
        } catch let error as HeraldAPIError {
            #expect(error.status == 403 && error.code == "alias_signature_invalid")
        }
        #expect(try await Self.devices(stack, app, alias: "kit-user").count == 1, "the forged bind changed nothing")

        try await client.add(tags: ["news"])
        do {
            try await client.add(tags: ["staff"])
            Issue.record("a tag outside client_tags was taken")
        } catch let error as HeraldAPIError {
            #expect(error.status == 403 && error.code == "tag_not_allowed")
        }

        // APNs hands the app a new token: the next launch's registration hands the old one over.
        let second = randomToken()
        try await client.register(deviceToken: second)
        let bound = try await Self.devices(stack, app, alias: "kit-user")
        #expect(bound.map { $0["token_prefix"] as? String } == [String(hexadecimal(second).prefix(8))])
        #expect(bound.first?["tags"] as? [String] == ["news"], "the tags moved with the token")
        let old = try await stack.call(
            "GET", "/v1/devices/by-token/\(hexadecimal(first))", key: app.serverKey)
        #expect(old["status"] as? String == "invalid" && old["invalid_reason"] as? String == "token_rotated")
    }

    @Test("a push over the long connection is shown once, acknowledged, and a recall removes its copies")
    func onlinePushAndRecall() async throws {
        let stack = try #require(Stack.current)
        let (app, center, client) = try await Self.phone(stack, alias: "online-user")
        await client.enterForeground()
        try await Stack.eventually(30, "the connection is welcomed") { await client.live }

        // The gateway welcomes a connection once its presence is written: an `online` push sent
        // now reaches it.
        let sent = try await stack.call(
            "POST", "/v1/pushes", key: app.serverKey,
            json:
                #"{"audience":{"aliases":["online-user"]},"notification":{"alert":{"title":"Sale","body":"20% off"},"data":{"sku":"42"}},"options":{"channel":"online","collapse_id":"kit-sale"}}"#
        )
        #expect(sent.status == 202, "\(sent.json)")
        let pushID = try #require((sent["id"] as? String).flatMap(UUID.init(uuidString:)))
        try await Self.expectDeliveredOnline(stack, app, pushID)
        try await Stack.eventually(60, "the push is shown") {
            await center.deliveredRecords.contains { $0.identifier == "kit-sale" }
        }
        let shown = try #require(await center.added.first)
        #expect(shown.title == "Sale" && shown.body == "20% off")
        #expect(shown.userInfo["herald"]?["push_id"]?.stringValue == pushID.uuidString.lowercased())
        #expect(shown.userInfo["sku"]?.stringValue == "42")
        try await Stack.eventually(60, "the push counts delivered_online") {
            let status = try await stack.call("GET", "/v1/pushes/\(pushID)", key: app.serverKey)
            return (status["counters"] as? [String: Any])?["delivered_online"] as? Int == 1
        }

        // The same push through APNs (its payload as the phone would get it): not shown again.
        var userInfo: [AnyHashable: Any] = [:]
        for (key, value) in shown.userInfo { userInfo[key] = value.foundationObject }
        #expect(await client.handleRemoteNotification(userInfo: userInfo) == .duplicate)

        // A reminder the app scheduled from that push, still pending: the recall takes it too.
        try await client.schedule(
            LocalNotification(
                identifier: "kit-reminder", body: "Sale ends soon", userInfo: shown.userInfo,
                trigger: LocalTrigger(fireDate: Date().addingTimeInterval(3600))))
        let recall = try await stack.call("POST", "/v1/pushes/\(pushID)/recall", key: app.serverKey)
        #expect(recall.status == 202, "\(recall.json)")
        try await Stack.eventually(60, "the revoke removes the shown and the pending copy") {
            let delivered = await center.removedDelivered
            let pending = await center.removedPending
            return delivered.contains("kit-sale") && pending.contains("kit-reminder")
        }
        let left = await center.deliveredRecords.count + center.pendingRecords.count
        #expect(left == 0)
        await client.enterBackground()
    }

    @Test(
        "in the background, a push and its recall come through APNs as apns-sim took them; the recall removes by push id and by collapse id"
    )
    func backgroundPushAndRecallThroughAPNs() async throws {
        let stack = try #require(Stack.current)
        let (app, center, client) = try await Self.phone(stack, alias: "background-user")
        let token = try #require(await client.deviceToken)
        try await stack.registerWithAPNs(token: token, app: app)
        // The app stays in the background: no long connection, so an `auto` push takes the APNs road.
        let sent = try await stack.call(
            "POST", "/v1/pushes", key: app.serverKey,
            json:
                #"{"audience":{"aliases":["background-user"]},"notification":{"alert":{"title":"News","body":"Read on"}},"options":{"collapse_id":"kit-news"}}"#
        )
        #expect(sent.status == 202, "\(sent.json)")
        let pushID = try #require((sent["id"] as? String).flatMap(UUID.init(uuidString:)))
        let copy = try await stack.apnsCopy(token: token, "the push reaches apns-sim") {
            Self.herald(in: $0)?["push_id"] as? String == pushID.uuidString.lowercased()
        }
        #expect(copy.collapseID == "kit-news", "the APNs copy carries the push's collapse id")

        // iOS shows the alert under its collapse id, without the app. Later, in the foreground,
        // the same copy handed to HeraldKit (`willPresent`) is shown once, then never again.
        await center.systemDelivered(NotificationRecord(identifier: "kit-news", pushID: pushID))
        // A copy of the same push the app showed under an identifier of its own: only the
        // recall's push id can find it.
        let ownCopy = "in-app-\(pushID)"
        await center.systemDelivered(NotificationRecord(identifier: ownCopy, pushID: pushID))
        #expect(await client.handleRemoteNotification(userInfo: copy.userInfo) == .show)
        #expect(await client.handleRemoteNotification(userInfo: copy.userInfo) == .duplicate)
        // A follow-up the app scheduled to replace it tomorrow: same identifier, no push id of
        // its own — only the recall's collapse id can find it.
        try await client.schedule(
            LocalNotification(
                identifier: "kit-news", body: "Still reading?",
                trigger: LocalTrigger(fireDate: Date().addingTimeInterval(86_400))))
        #expect(await center.pendingRecords.map(\.pushID) == [nil])

        let recall = try await stack.call("POST", "/v1/pushes/\(pushID)/recall", key: app.serverKey)
        #expect(recall.status == 202, "\(recall.json)")
        let revoke = try await stack.apnsCopy(token: token, "the recall reaches apns-sim") {
            Self.herald(in: $0)?["revoke"] as? String == pushID.uuidString.lowercased()
        }
        #expect(revoke.pushType == "background" && revoke.priority == 5, "a recall is a background push")
        #expect(Self.herald(in: revoke.payload)?["collapse_id"] as? String == "kit-news")
        guard case .revoked(let plan) = await client.handleRemoteNotification(userInfo: revoke.userInfo) else {
            Issue.record("the recall's payload was not taken as a revoke: \(revoke.payload)")
            return
        }
        #expect(Set(plan.delivered) == ["kit-news", ownCopy] && plan.pending == ["kit-news"])
        let left = await center.deliveredRecords.count + center.pendingRecords.count
        #expect(left == 0, "the recall left nothing shown or scheduled")
    }

    static func herald(in payload: [String: Any]) -> [String: Any]? { payload["herald"] as? [String: Any] }

    @Test("a new token while connected: the connection follows it, and the authorization state reaches the server")
    func rotationWhileConnected() async throws {
        let stack = try #require(Stack.current)
        let first = randomToken()
        let (app, center, client) = try await Self.phone(stack, alias: "rotating-user", token: first)
        try await client.report(authorizationStatus: "provisional")
        let device = try await stack.call("GET", "/v1/devices/by-token/\(hexadecimal(first))", key: app.serverKey)
        #expect(device["authorization_status"] as? String == "provisional", "\(device.json)")
        await client.enterForeground()
        try await Stack.eventually(30, "the connection is welcomed") { await client.live }

        // APNs hands the running app a new token: the registration retires the old one and the
        // long connection says hello again under the new one (under the old, an online push to
        // the alias would find nobody connected and be skipped).
        let second = randomToken()
        try await client.register(deviceToken: second)
        try await Stack.eventually(30, "the connection is welcomed under the new token") { await client.live }
        let rotated = try await stack.call("GET", "/v1/devices/by-token/\(hexadecimal(second))", key: app.serverKey)
        #expect(rotated["authorization_status"] as? String == "provisional", "the state moved with the token")
        let sent = try await stack.call(
            "POST", "/v1/pushes", key: app.serverKey,
            json:
                #"{"audience":{"aliases":["rotating-user"]},"notification":{"alert":{"body":"Still you"}},"options":{"channel":"online"}}"#
        )
        let pushID = try #require((sent["id"] as? String).flatMap(UUID.init(uuidString:)), "\(sent.json)")
        try await Self.expectDeliveredOnline(stack, app, pushID)
        try await Stack.eventually(60, "the push is shown") { await !center.deliveredRecords.isEmpty }
        await client.enterBackground()
    }

    @Test("opens and actions reported while offline are queued on disk and counted once")
    func engagementAcrossOffline() async throws {
        let stack = try #require(Stack.current)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("heraldkit-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let storage = try FileStorage(directory: folder)
        let (app, center, online) = try await Self.phone(stack, alias: "engaged-user", storage: storage)
        await online.enterForeground()
        try await Stack.eventually(30, "the connection is welcomed") { await online.live }
        let sent = try await stack.call(
            "POST", "/v1/pushes", key: app.serverKey,
            json:
                #"{"audience":{"aliases":["engaged-user"]},"notification":{"alert":{"body":"Read me"}},"options":{"channel":"online"}}"#
        )
        let pushID = try #require((sent["id"] as? String).flatMap(UUID.init(uuidString:)))
        try await Self.expectDeliveredOnline(stack, app, pushID)
        try await Stack.eventually(60, "the push is shown") { await !center.deliveredRecords.isEmpty }
        await online.enterBackground()

        // The user opens it and taps "reply" with no network: herald-api cannot be reached.
        let offline = Self.client(
            stack, app, storage: storage, center: center, apiURL: URL(string: "http://127.0.0.1:9")!)
        await offline.report(.opened, pushID: pushID)
        await offline.report(.action, pushID: pushID, action: "reply", textInput: true)
        #expect(await offline.pendingEvents == 2)

        // The next launch, online again: the queue on disk is sent.
        let relaunched = Self.client(stack, app, storage: storage, center: center)
        #expect(await relaunched.pendingEvents == 2)
        await relaunched.flushEvents(force: true)
        #expect(await relaunched.pendingEvents == 0)
        try await Stack.eventually(30, "the server counts the open and the action") {
            let status = try await stack.call("GET", "/v1/pushes/\(pushID)", key: app.serverKey)
            let engagement = status["engagement"] as? [String: Any]
            return engagement?["opened"] as? Int == 1
                && (engagement?["actions"] as? [String: Any])?["reply"] as? Int == 1
        }

        // The same batch again (an answer lost on the way back): counted nothing twice.
        let token = try #require(await relaunched.deviceToken)
        let api = HeraldAPIClient(baseURL: stack.apiURL, clientKey: app.clientKey, transport: URLSessionTransport())
        let repeated = try await api.report([
            EngagementEvent(pushID: pushID, token: token, type: .opened, occurredAt: Date())
        ])
        #expect(repeated.counted == 0 && repeated.duplicates == 1)
        let status = try await stack.call("GET", "/v1/pushes/\(pushID)", key: app.serverKey)
        #expect((status["engagement"] as? [String: Any])?["opened"] as? Int == 1)
    }

    /// Waits for an `online` push to one welcomed device to be accounted, and fails at once when
    /// it was skipped as offline: the gateway welcomed the device before its presence was written
    /// (after 5 s without it: herald_gateway_welcomes_before_presence_total).
    static func expectDeliveredOnline(_ stack: Stack, _ app: Stack.App, _ pushID: UUID) async throws {
        @Sendable func counters() async throws -> [String: Any] {
            let status = try await stack.call("GET", "/v1/pushes/\(pushID)", key: app.serverKey)
            return status["counters"] as? [String: Any] ?? [:]
        }
        try await Stack.eventually(60, "the push is delivered online or skipped") {
            let counters = try await counters()
            return counters["delivered_online"] as? Int == 1 || counters["skipped"] as? Int == 1
        }
        let counters = try await counters()
        #expect(counters["delivered_online"] as? Int == 1, "a welcomed device's online push was skipped: \(counters)")
    }
}
