import Foundation
import HTTPTypes
import HeraldCore
import HeraldDomain
import HeraldStore
import Hummingbird
import Logging
import PostgresNIO
import ServiceLifecycle
import StoreTestSupport
import Synchronization
import Testing

@testable import HeraldCenter

/// A real HTTP receiver on loopback: `/ok` answers 200, `/flaky` 500 to its first `failures`
/// requests then 200, `/hang` never answers (until the receiver stops). It keeps every
/// request's event id, signature header and body.
final class WebhookReceiver: Sendable {
    struct Received: Sendable {
        var path: String
        var signature: String
        var body: [UInt8]
        var status: Int
    }

    let received = Mutex<[Received]>([])
    /// Requests that arrived, by path, counted before they are answered (or hang).
    let arrived = Mutex<[String: Int]>([:])
    let failures: Int
    /// The port, once the receiver listens.
    private let listening: AsyncStream<Int>
    private let announce: AsyncStream<Int>.Continuation

    init(failures: Int) {
        self.failures = failures
        (listening, announce) = AsyncStream<Int>.makeStream()
    }

    /// A receiver serving on loopback, once it listens: its port, and the task serving it
    /// (cancel it to stop the receiver).
    static func start(failures: Int) async throws -> (WebhookReceiver, port: Int, serving: Task<Void, any Error>) {
        let receiver = WebhookReceiver(failures: failures)
        let serving = Task { try await receiver.run() }
        var ports = receiver.listening.makeAsyncIterator()
        guard let port = await ports.next() else {
            serving.cancel()
            throw CancellationError()
        }
        return (receiver, port, serving)
    }

    func run() async throws {
        let router = Router()
        for path in ["ok", "flaky", "hang"] {
            router.post(RouterPath(stringLiteral: path)) { request, _ -> Response in
                self.arrived.withLock { $0[path, default: 0] += 1 }
                let body = Array(try await request.body.collect(upTo: 1 << 20).readableBytesView)
                let signature = request.headers[HTTPField.Name("Herald-Signature")!] ?? ""
                if path == "hang" {
                    // No answer: held until the receiver stops (its task cancelled).
                    let (never, held) = AsyncStream<Void>.makeStream()
                    for await _ in never {}
                    held.finish()
                    throw CancellationError()
                }
                let status = self.received.withLock { received -> Int in
                    let earlier = received.filter { $0.path == "flaky" }.count
                    let status = path == "flaky" && earlier < self.failures ? 500 : 200
                    received.append(Received(path: path, signature: signature, body: body, status: status))
                    return status
                }
                return Response(status: .init(code: status))
            }
        }
        let application = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in self.announce.yield(channel.localAddress?.port ?? 0) })
        try await application.runService()
    }

    /// The event ids `path` answered 200 to, and every event id it saw.
    func events(_ path: String) -> (delivered: [String], seen: [String]) {
        received.withLock { received in
            let mine = received.filter { $0.path == path }
            func id(_ entry: Received) -> String {
                ((try? JSONSerialization.jsonObject(with: Data(entry.body))) as? [String: Any])?["id"] as? String ?? ""
            }
            return (mine.filter { $0.status == 200 }.map(id), mine.map(id))
        }
    }
}

@Suite("webhook delivery", .serialized)
struct WebhookDispatcherTests {
    static let masterKey = Data((0..<32).map { UInt8($0) }).base64EncodedString()

    func endpoint(
        _ env: CenterEnvironment, path: String, port: Int, secret: [UInt8], cipher: CredentialCipher,
        types: [String] = ["push.completed"], host: String = "127.0.0.1", app: UUID? = nil, maxConcurrency: Int = 2
    ) async throws -> UUID {
        let id = UUID()
        let sealed = try cipher.seal(secret) { WebhookSecret.associatedData(endpointID: id, sealingKeyID: $0) }
        _ = try await WebhookRepository(client: env.database, logger: env.logger).createEndpoint(
            id: id, appID: app ?? env.app.id, url: "http://\(host):\(port)/\(path)", description: path,
            eventTypes: types, maxConcurrency: maxConcurrency,
            secret: WebhookSecret(sealed: sealed.sealed, sealingKeyID: sealed.keyID))
        return id
    }

    func dispatcher(
        _ env: CenterEnvironment, cipher: CredentialCipher, name: String, retryWindow: Duration = .seconds(3600),
        metrics: CenterMetrics = CenterMetrics(), allowPrivateNetworks: Bool = true,
        maxInFlight: Int = 64, maxInFlightPerApp: Int = 16, requestTimeout: Duration = .seconds(1),
        resolver: @escaping WebhookAddressCheck.Resolver = WebhookAddressCheck.systemResolver
    ) -> WebhookDispatcher {
        var settings = WebhookDispatcher.Settings()
        settings.pollInterval = .milliseconds(50)
        settings.requestTimeout = requestTimeout
        settings.maxInFlight = maxInFlight
        settings.maxInFlightPerApp = maxInFlightPerApp
        settings.firstRetryDelay = .milliseconds(200)
        settings.maximumRetryDelay = .milliseconds(400)
        settings.retryWindow = retryWindow
        // The receiver listens on loopback: a test of its own checks the refusal.
        settings.allowPrivateNetworks = allowPrivateNetworks
        return WebhookDispatcher(
            settings: settings, center: name, webhooks: WebhookRepository(client: env.database, logger: env.logger),
            cipher: cipher, metrics: metrics, resolver: resolver, logger: env.logger)
    }

    @Test(
        "retries wait Herald's back-off: between half and all of 30 s doubling to an hour, and stop at the window's end"
    )
    func retryTimes() throws {
        var settings = WebhookDispatcher.Settings()
        settings.retryWindow = .seconds(24 * 3600)
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        func wait(_ attempts: Int, unit: Double, now: Date = start) -> Double? {
            WebhookDispatcher.retryTime(
                afterAttempts: attempts, windowStart: start, settings: settings, now: now, unit: unit
            ).map { $0.timeIntervalSince(now) }
        }
        #expect(wait(1, unit: 0) == 15 && wait(1, unit: 0.999_999)! > 29.99)
        #expect(wait(2, unit: 0) == 30 && wait(3, unit: 0) == 60)
        // The ceiling stops at an hour however many attempts were made.
        #expect(wait(8, unit: 0) == 1800 && wait(30, unit: 0) == 1800)
        // A retry that would fall past the window is none: the delivery is dead.
        let late = start.addingTimeInterval(24 * 3600 - 10)
        #expect(wait(1, unit: 0, now: late) == nil)
        #expect(wait(1, unit: 0, now: start.addingTimeInterval(24 * 3600 - 20)) != nil)
    }

    /// The events written so far, oldest first: type, data (as JSON) and the endpoints they are for.
    func events(_ env: CenterEnvironment) async throws -> [(type: String, data: [String: Any], endpoints: Set<UUID>)] {
        let rows = try await env.database.query(
            """
            SELECT e.type, e.data::text, COALESCE(array_agg(d.endpoint_id) FILTER (WHERE d.endpoint_id IS NOT NULL), '{}')
            FROM webhook_events e LEFT JOIN webhook_deliveries d ON d.event_id = e.id
            GROUP BY e.id, e.type, e.data, e.created_at ORDER BY e.created_at, e.type
            """, logger: env.logger)
        var events: [(type: String, data: [String: Any], endpoints: Set<UUID>)] = []
        for try await (type, data, endpoints) in rows.decode((String, String, [UUID]).self) {
            let object = try JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any] ?? [:]
            events.append((type, object, Set(endpoints)))
        }
        return events
    }

    @Test(
        "completed pushes reach every subscribed endpoint signed; one that fails for a while gets each event after retries; one that hangs holds back no other; a restarted dispatcher loses nothing"
    )
    func deliveries() async throws {
        try await withCenterEnvironment { env in
            let cipher = try CredentialCipher(masterKeyBase64: Self.masterKey)
            let (receiver, port, serving) = try await WebhookReceiver.start(failures: 3)
            defer { serving.cancel() }
            let secret = Array("whsec-test-secret-0123456789".utf8)
            let okEndpoint = try await endpoint(env, path: "ok", port: port, secret: secret, cipher: cipher)
            let flakyEndpoint = try await endpoint(env, path: "flaky", port: port, secret: secret, cipher: cipher)
            let hang = try await endpoint(env, path: "hang", port: port, secret: secret, cipher: cipher)
            _ = try await endpoint(
                env, path: "ok", port: port, secret: secret, cipher: cipher, types: ["device.invalidated"])

            let devices = try await env.register(2)
            var pushes: [UUID] = []
            for _ in 0..<2 {
                let push = try await env.createPush(audience: .everyone)
                try await accountAsCenter(
                    pushID: push.id, deviceIDs: devices, client: env.database, logger: env.logger)
                #expect(try await env.state(of: push) == .completed)
                pushes.append(push.id)
            }

            // The first dispatcher stops while /flaky still fails; a second one goes on.
            let first = dispatcher(env, cipher: cipher, name: "first")
            let firstRun = Task { try await first.run() }
            #expect(try await env.eventually(timeout: .seconds(20)) { receiver.events("flaky").seen.count >= 2 })
            firstRun.cancel()
            _ = try? await firstRun.value
            let second = dispatcher(env, cipher: cipher, name: "second")
            let secondRun = Task { try await second.run() }
            defer { secondRun.cancel() }

            #expect(
                try await env.eventually(timeout: .seconds(30)) {
                    Set(receiver.events("ok").delivered).count == 2
                        && Set(receiver.events("flaky").delivered).count == 2
                })
            let ok = receiver.events("ok").delivered
            // At least once: a request the first dispatcher sent before it stopped, answered but not
            // recorded, comes again from the second — the same event id, for the receiver to drop.
            #expect(Set(ok).count == 2, "each event at /ok, after de-duplication: \(ok)")
            #expect(Set(receiver.events("flaky").delivered) == Set(ok), "the same events at /flaky, after retries")
            #expect(receiver.events("flaky").seen.count > 2, "/flaky failed first")
            // While /hang never answers, the others were served: it holds back only itself.
            #expect(receiver.events("hang").delivered.isEmpty)

            // Signatures verify with the secret; the events carry the pushes and their counters.
            let now = Int64(Date().timeIntervalSince1970)
            for entry in receiver.received.withLock({ $0 }) where entry.status == 200 {
                #expect(WebhookSignature.verify(header: entry.signature, body: entry.body, secret: secret, now: now))
                #expect(
                    !WebhookSignature.verify(
                        header: entry.signature, body: entry.body, secret: Array("wrong".utf8), now: now))
                let event = try #require(try JSONSerialization.jsonObject(with: Data(entry.body)) as? [String: Any])
                #expect(event["type"] as? String == "push.completed")
                let data = try #require(event["data"] as? [String: Any])
                #expect(pushes.map { $0.uuidString.lowercased() }.contains(data["push_id"] as? String ?? ""))
                #expect((data["counters"] as? [String: Any])?["accepted"] as? Int == 2)
            }

            // The receiver answered; the dispatcher records it just after — wait for that before
            // stopping it (a hard cancel would drop the record, and the delivery would stay pending).
            let webhooks = WebhookRepository(client: env.database, logger: env.logger)
            #expect(
                try await env.eventually(timeout: .seconds(30)) {
                    var recorded = 0
                    for id in [okEndpoint, flakyEndpoint] {
                        recorded +=
                            try await webhooks.deliveries(
                                endpointID: id, appID: env.app.id, state: "delivered", after: nil, limit: 10)?.count
                            ?? 0
                    }
                    return recorded == 4
                })

            // Retention: old attempts go; an old event stays while a delivery of it is pending
            // (/hang's), and goes once none is.
            secondRun.cancel()
            _ = try? await secondRun.value
            try await env.database.query(
                "UPDATE webhook_attempts SET attempted_at = now() - interval '8 days'", logger: env.logger)
            try await env.database.query(
                "UPDATE webhook_events SET created_at = now() - interval '31 days'", logger: env.logger)
            // This app's rows only: the suite's other tests leave events of their own apps.
            func count(_ table: String) async throws -> Int64 {
                let scope =
                    table == "webhook_events"
                    ? "app_id = '\(env.app.id)'"
                    : "endpoint_id IN (SELECT id FROM webhook_endpoints WHERE app_id = '\(env.app.id)')"
                let rows = try await env.database.query(
                    PostgresQuery(unsafeSQL: "SELECT count(*) FROM \(table) WHERE \(scope)"), logger: env.logger)
                for try await count in rows.decode(Int64.self) { return count }
                return -1
            }
            let week = Duration.seconds(7 * 86_400)
            let month = Duration.seconds(30 * 86_400)
            try await webhooks.purge(attemptsOlderThan: week, eventsOlderThan: month, limit: 1000)
            #expect(try await count("webhook_attempts") == 0)
            #expect(try await count("webhook_events") == 2, "pending at /hang")
            #expect(try await webhooks.deleteEndpoint(id: hang, appID: env.app.id))
            try await webhooks.purge(attemptsOlderThan: week, eventsOlderThan: month, limit: 1000)
            #expect(try await count("webhook_events") == 0)
            #expect(try await count("webhook_deliveries") == 0)
        }
    }

    @Test(
        "device.invalidated (with APNs' timestamp), push.failed once per push and delivery.batch are written with the outcomes that report them, for subscribed endpoints only"
    )
    func outcomeEvents() async throws {
        try await withCenterEnvironment { env in
            let cipher = try CredentialCipher(masterKeyBase64: Self.masterKey)
            let secret = Array("whsec-events".utf8)
            let all = try await endpoint(
                env, path: "all", port: 9, secret: secret, cipher: cipher,
                types: ["device.invalidated", "push.failed", "delivery.batch"])
            let completedOnly = try await endpoint(env, path: "completed", port: 9, secret: secret, cipher: cipher)
            let devices = try await env.register(4)

            // A push whose batch APNs answered: two accepted, one 410 with its timestamp, one BadDeviceToken.
            let push = try await env.createPush(audience: .everyone)
            let unregisteredAt = Date().addingTimeInterval(5)
            try await accountAsCenter(
                pushID: push.id, deviceIDs: devices,
                failures: [
                    .init(
                        deviceID: devices[0], status: .rejected, reason: "Unregistered", httpStatus: 410,
                        unregisteredAt: unregisteredAt, attempts: 1),
                    .init(
                        deviceID: devices[1], status: .rejected, reason: "BadDeviceToken", httpStatus: 400,
                        unregisteredAt: nil, attempts: 1),
                ], client: env.database, logger: env.logger)
            var events = try await events(env)
            let invalidated = events.filter { $0.type == "device.invalidated" }
            #expect(invalidated.count == 2)
            #expect(invalidated.allSatisfy { $0.endpoints == [all] })
            let byDevice = Dictionary(
                uniqueKeysWithValues: invalidated.map { (Int64($0.data["registration_id"] as? Int ?? 0), $0.data) })
            let dated = try #require(byDevice[devices[0]])
            #expect(dated["reason"] as? String == "Unregistered")
            #expect(
                dated["token_prefix"] as? String
                    == CenterEnvironment.token(seed: 1, number: 0).prefix(4).map { String(format: "%02x", $0) }.joined(),
                "the token's first 8 hex digits, as the API shows it (never the whole token)")
            #expect(dated["token"] == nil)
            #expect(dated["environment"] as? String == "production")
            let timestamp = try #require(dated["apns_timestamp"] as? String)
            let parser = ISO8601DateFormatter()
            parser.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            let parsed = try #require(parser.date(from: timestamp), "an ISO 8601 time: \(timestamp)")
            #expect(timestamp.hasSuffix("Z"), "in UTC, whatever the server's time zone: \(timestamp)")
            #expect(
                abs(parsed.timeIntervalSince(unregisteredAt)) < 0.002, "APNs' own timestamp, not the time of the update"
            )
            let undated = try #require(byDevice[devices[1]])
            #expect(undated["reason"] as? String == "BadDeviceToken")
            #expect(undated["apns_timestamp"] == nil, "BadDeviceToken comes without a timestamp")

            let batch = try #require(events.first { $0.type == "delivery.batch" })
            #expect(batch.endpoints == [all])
            #expect(batch.data["push_id"] as? String == push.id.uuidString.lowercased())
            #expect(Set((batch.data["accepted"] as? [Int] ?? []).map(Int64.init)) == Set(devices[2...]))
            let failed = batch.data["failed"] as? [[String: Any]] ?? []
            #expect(failed.map { Int64($0["registration_id"] as? Int ?? 0) } == Array(devices[0...1]))
            #expect(failed.map { $0["reason"] as? String ?? "" } == ["Unregistered", "BadDeviceToken"])
            #expect(!events.contains { $0.type == "push.failed" }, "no credential was refused")
            // push.completed went to the endpoint subscribed to it alone.
            #expect(events.filter { $0.type == "push.completed" }.map(\.endpoints) == [[completedOnly]])

            // A push whose two batches APNs refused for the app's credential: push.failed once.
            let refused = try await env.createPush(audience: .everyone)
            let center = "events-test"
            _ = try await env.claims.claim([refused.id], by: center, lease: .seconds(60))
            let live = Array(devices[2...])
            let batches = live.enumerated().map { index, device in
                RecordedBatch(
                    pushID: refused.id, sequence: index, firstDevice: device, lastDevice: device, targetCount: 1,
                    environment: .production, topic: env.app.bundleID)
            }
            _ = try await env.progress.recordPage(pushID: refused.id, by: center, cursor: live.last!, batches: batches)
            _ = try await env.progress.finishFanout(pushID: refused.id, by: center)
            for (index, device) in live.enumerated() {
                _ = try await env.ledger.applyOutcomes([
                    BatchOutcome(
                        pushID: refused.id, sequence: index, acceptedDeviceIDs: [],
                        failures: [
                            .init(
                                deviceID: device, status: .rejected, reason: "InvalidProviderToken", httpStatus: 403,
                                unregisteredAt: nil, attempts: 1)
                        ])
                ])
            }
            events = try await self.events(env)
            let failures = events.filter { $0.type == "push.failed" }
            #expect(failures.count == 1, "once per push, however many batches say so")
            #expect(failures.first?.data["push_id"] as? String == refused.id.uuidString.lowercased())
            #expect(failures.first?.data["reason"] as? String == "InvalidProviderToken")
            #expect(failures.first?.endpoints == [all])
            #expect(events.filter { $0.type == "delivery.batch" }.count == 3, "one per batch counted")
            #expect(
                events.filter { $0.type == "device.invalidated" }.count == 2,
                "a credential refusal invalidates no token")
        }
    }

    @Test(
        "a rotated secret signs beside the new one during its grace period; a disabled endpoint's deliveries wait; a dead delivery replayed is delivered"
    )
    func endpointLifecycle() async throws {
        try await withCenterEnvironment { env in
            let cipher = try CredentialCipher(masterKeyBase64: Self.masterKey)
            let (receiver, port, serving) = try await WebhookReceiver.start(failures: 1)
            defer { serving.cancel() }
            let webhooks = WebhookRepository(client: env.database, logger: env.logger)
            let old = Array("whsec-old".utf8)
            let new = Array("whsec-new".utf8)
            let ok = try await endpoint(env, path: "ok", port: port, secret: old, cipher: cipher)
            let sealed = try cipher.seal(new) { WebhookSecret.associatedData(endpointID: ok, sealingKeyID: $0) }
            _ = try await webhooks.replaceSecret(
                id: ok, appID: env.app.id, secret: WebhookSecret(sealed: sealed.sealed, sealingKeyID: sealed.keyID),
                previousUntil: Date().addingTimeInterval(3600))
            // Disabled: its test event waits.
            let disabled = try await webhooks.updateEndpoint(
                id: ok, appID: env.app.id, .init(eventTypes: ["push.completed", "push.failed"], enabled: false))
            #expect(disabled?.enabled == false)
            #expect(disabled?.eventTypes == ["push.completed", "push.failed"])
            let waiting = try #require(try await webhooks.queueTest(endpointID: ok, appID: env.app.id))

            // A retry window this short makes /flaky's first failure its last: the delivery is dead.
            let flaky = try await endpoint(env, path: "flaky", port: port, secret: new, cipher: cipher)
            let dying = try #require(try await webhooks.queueTest(endpointID: flaky, appID: env.app.id))
            let metrics = CenterMetrics()
            let running = dispatcher(
                env, cipher: cipher, name: "lifecycle", retryWindow: .milliseconds(1), metrics: metrics)
            let run = Task { try await running.run() }
            defer { run.cancel() }
            #expect(
                try await env.eventually(timeout: .seconds(20)) {
                    try await webhooks.deliveries(
                        endpointID: flaky, appID: env.app.id, state: "dead", after: nil, limit: 10)?.map(\.eventID)
                        == [dying]
                })
            #expect(receiver.events("ok").seen.isEmpty, "a disabled endpoint gets nothing")
            #expect(metrics.prometheusText().contains(#"herald_center_webhook_attempts_total{result="dead"} 1"#))

            // Replayed, it gets a window of its own and goes out; enabled, /ok gets its event.
            #expect(try await webhooks.replayDead(endpointID: flaky, appID: env.app.id, eventIDs: nil, limit: 100) == 1)
            #expect(try await webhooks.replayDead(endpointID: flaky, appID: env.app.id, eventIDs: nil, limit: 100) == 0)
            _ = try await webhooks.updateEndpoint(id: ok, appID: env.app.id, .init(enabled: true))
            #expect(
                try await env.eventually(timeout: .seconds(20)) {
                    receiver.events("flaky").delivered == [dying.uuidString.lowercased()]
                        && receiver.events("ok").delivered == [waiting.uuidString.lowercased()]
                })
            let now = Int64(Date().timeIntervalSince1970)
            let signed = try #require(receiver.received.withLock { $0 }.first { $0.path == "ok" })
            #expect(WebhookSignature.verify(header: signed.signature, body: signed.body, secret: new, now: now))
            #expect(
                WebhookSignature.verify(header: signed.signature, body: signed.body, secret: old, now: now),
                "the old secret signs too during the grace period")
            #expect(
                try await webhooks.replayDead(endpointID: ok, appID: env.otherApp.id, eventIDs: nil, limit: 1) == nil)
        }
    }

    @Test(
        "a center that may not reach private networks refuses a receiver on loopback without connecting, and says why")
    func privateAddressesRefused() async throws {
        try await withCenterEnvironment { env in
            let cipher = try CredentialCipher(masterKeyBase64: Self.masterKey)
            let (receiver, port, serving) = try await WebhookReceiver.start(failures: 0)
            defer { serving.cancel() }
            let webhooks = WebhookRepository(client: env.database, logger: env.logger)
            let ok = try await endpoint(env, path: "ok", port: port, secret: Array("s".utf8), cipher: cipher)
            _ = try await webhooks.queueTest(endpointID: ok, appID: env.app.id)
            let running = dispatcher(env, cipher: cipher, name: "guarded", allowPrivateNetworks: false)
            let run = Task { try await running.run() }
            defer { run.cancel() }
            #expect(
                try await env.eventually(timeout: .seconds(20)) {
                    !(try await webhooks.attempts(endpointID: ok, appID: env.app.id, before: nil, limit: 10) ?? [])
                        .isEmpty
                })
            let attempt = try #require(
                try await webhooks.attempts(endpointID: ok, appID: env.app.id, before: nil, limit: 10)?.first)
            #expect(attempt.status == nil)
            #expect(attempt.error == "refused: 127.0.0.1 is not a public address", "\(attempt.error ?? "-")")
            #expect(receiver.received.withLock { $0 }.isEmpty, "nothing reached the receiver")
        }
    }

    @Test("the address check: which literals and resolved addresses are refused, and where a delivery connects")
    func addressDecisions() async {
        func decide(_ url: String, resolving addresses: [String] = [], allowPrivate: Bool = false) async
            -> WebhookAddressCheck.Decision
        {
            await WebhookAddressCheck.decide(url: url, allowPrivateNetworks: allowPrivate) { _ in addresses }
        }
        func tenantText(_ decision: WebhookAddressCheck.Decision) -> String? {
            if case .refused(let tenant, _) = decision { return tenant }
            return nil
        }
        // Literals: public ones connect as written, every other range is refused.
        #expect(await decide("https://93.184.216.34/hook") == .connect(host: "93.184.216.34", address: nil))
        for literal in [
            "127.0.0.1", "10.1.2.3", "169.254.169.254", "100.64.0.1", "[::1]", "[fd00::1]", "[::ffff:10.0.0.1]",
            "[::a00:1]", "[2002:a00:1::1]", "[2001:0:a00:1::1]", "[64:ff9b:1::a00:1]",
        ] {
            #expect(tenantText(await decide("https://\(literal)/hook")) != nil, "\(literal)")
        }
        // Numbers in forms the resolver reads differently from a dotted quad: refused outright.
        for numeric in ["012.0.0.1", "0x7f.1", "127.1", "2130706433"] {
            #expect(tenantText(await decide("https://\(numeric)/hook"))?.contains("is a number") == true, "\(numeric)")
        }
        // A name connects to the address that was checked, IPv4 first.
        #expect(
            await decide("https://hooks.example.com/x", resolving: ["93.184.216.34"])
                == .connect(host: "hooks.example.com", address: "93.184.216.34"))
        #expect(
            await decide("https://hooks.example.com/x", resolving: ["2606:2800:220:1::1", "93.184.216.34"])
                == .connect(host: "hooks.example.com", address: "93.184.216.34"))
        // Any address that is not public refuses the name; the app is not told which address.
        let rebound = await decide("https://rebind.example.com/x", resolving: ["93.184.216.34", "10.0.0.7"])
        guard case .refused(let tenant, let detail) = rebound else {
            Issue.record("a name resolving to 10.0.0.7 was not refused")
            return
        }
        #expect(!tenant.contains("10.0.0.7") && detail.contains("10.0.0.7"))
        #expect(
            tenantText(await decide("https://nowhere.example.com/x")) == "nowhere.example.com resolves to no address")
        // A center allowed into private networks still connects to what it resolved.
        #expect(
            await decide("http://receiver.internal/x", resolving: ["10.0.0.7"], allowPrivate: true)
                == .connect(host: "receiver.internal", address: "10.0.0.7"))
    }

    @Test(
        "a delivery connects to the address its check resolved, never resolving the name again; a failed one shows the app a class of error, not the center's error text"
    )
    func connectsToTheCheckedAddress() async throws {
        try await withCenterEnvironment { env in
            let cipher = try CredentialCipher(masterKeyBase64: Self.masterKey)
            let (receiver, port, serving) = try await WebhookReceiver.start(failures: 0)
            defer { serving.cancel() }
            let webhooks = WebhookRepository(client: env.database, logger: env.logger)
            // `.invalid` is never in DNS: only the check's resolver knows this name.
            let named = try await endpoint(
                env, path: "ok", port: port, secret: Array("s".utf8), cipher: cipher, host: "receiver.herald.invalid")
            // A port nothing listens on (the receiver's, once it is closed, is not: port 9 is discard).
            let closed = try await endpoint(env, path: "ok", port: 9, secret: Array("s".utf8), cipher: cipher)
            _ = try await webhooks.queueTest(endpointID: named, appID: env.app.id)
            _ = try await webhooks.queueTest(endpointID: closed, appID: env.app.id)
            let resolved = Mutex<[String]>([])
            let running = dispatcher(env, cipher: cipher, name: "pinned", retryWindow: .zero) { host in
                resolved.withLock { $0.append(host) }
                return host == "receiver.herald.invalid" ? ["127.0.0.1"] : []
            }
            let run = Task { try await running.run() }
            defer { run.cancel() }
            #expect(
                try await env.eventually(timeout: .seconds(20)) {
                    guard receiver.events("ok").delivered.count == 1 else { return false }
                    let attempts = try await webhooks.attempts(
                        endpointID: closed, appID: env.app.id, before: nil, limit: 10)
                    return !(attempts ?? []).isEmpty
                })
            #expect(resolved.withLock { $0 } == ["receiver.herald.invalid"])
            let failed = try #require(
                try await webhooks.attempts(endpointID: closed, appID: env.app.id, before: nil, limit: 10)?.first)
            #expect(failed.status == nil)
            #expect(failed.error == "connection refused", "\(failed.error ?? "-")")
        }
    }

    @Test(
        "an app whose endpoints hang holds its share of the center's slots and each endpoint its max_concurrency, decided in the claim; another app's event goes out while they hang"
    )
    func aHangingAppLeavesTheOthersTheirSlots() async throws {
        try await withCenterEnvironment { env in
            let cipher = try CredentialCipher(masterKeyBase64: Self.masterKey)
            let (receiver, port, serving) = try await WebhookReceiver.start(failures: 0)
            defer { serving.cancel() }
            let webhooks = WebhookRepository(client: env.database, logger: env.logger)
            let secret = Array("s".utf8)
            // The tarpit app: two endpoints that never answer in time, their events older than
            // the other app's. One endpoint allows 2 requests at once, the other 32.
            let narrow = try await endpoint(env, path: "hang", port: port, secret: secret, cipher: cipher)
            for _ in 0..<5 { _ = try await webhooks.queueTest(endpointID: narrow, appID: env.app.id) }
            let wide = try await endpoint(
                env, path: "hang", port: port, secret: secret, cipher: cipher, maxConcurrency: 32)
            for _ in 0..<10 { _ = try await webhooks.queueTest(endpointID: wide, appID: env.app.id) }
            let other = try await endpoint(
                env, path: "ok", port: port, secret: secret, cipher: cipher, app: env.otherApp.id)
            _ = try await webhooks.queueTest(endpointID: other, appID: env.otherApp.id)
            // 8 slots, 4 an app; the tarpit's requests time out after a minute, well after this test.
            let running = dispatcher(
                env, cipher: cipher, name: "shared", maxInFlight: 8, maxInFlightPerApp: 4, requestTimeout: .seconds(60))
            let run = Task { try await running.run() }
            defer { run.cancel() }
            #expect(try await env.eventually(timeout: .seconds(30)) { receiver.events("ok").delivered.count == 1 })
            // The other app's event went out while the tarpit's requests still hung: none has
            // come to an attempt yet.
            for endpoint in [narrow, wide] {
                let attempts = try await webhooks.attempts(
                    endpointID: endpoint, appID: env.app.id, before: nil, limit: 10)
                #expect(attempts?.isEmpty == true)
            }
            // The tarpit app holds 4 of the 8 slots (its share), never more; its narrow endpoint 2.
            #expect(try await env.eventually(timeout: .seconds(30)) { receiver.arrived.withLock { $0["hang"] } == 4 })
            let leased = try await env.database.query(
                """
                SELECT endpoint_id, count(*)::int8 FROM webhook_deliveries
                WHERE state = 'pending' AND leased_until >= now() GROUP BY endpoint_id
                """, logger: env.logger)
            var byEndpoint: [UUID: Int64] = [:]
            for try await (endpoint, count) in leased.decode((UUID, Int64).self) { byEndpoint[endpoint] = count }
            #expect(byEndpoint[narrow] == 2 && byEndpoint[wide] == 2, "\(byEndpoint)")
        }
    }
}
