import Foundation
import HTTPTypes
import HeraldCenter
import HeraldCore
import HeraldStore
import Hummingbird
import Logging
import PostgresNIO
import ServiceLifecycle
import StoreTestSupport
import Synchronization
import Testing

/// A real HTTP receiver on loopback: `/ok` answers 200, `/flaky` 500 to its first `failures`
/// requests then 200, `/hang` never answers within the dispatcher's timeout. It keeps every
/// request's event id, signature header and body.
final class WebhookReceiver: Sendable {
    struct Received: Sendable {
        var path: String
        var signature: String
        var body: [UInt8]
        var status: Int
    }

    let received = Mutex<[Received]>([])
    let failures: Int
    let port = Mutex<Int>(0)

    init(failures: Int) { self.failures = failures }

    func run() async throws {
        let router = Router()
        for path in ["ok", "flaky", "hang"] {
            router.post(RouterPath(stringLiteral: path)) { request, _ -> Response in
                let body = Array(try await request.body.collect(upTo: 1 << 20).readableBytesView)
                let signature = request.headers[HTTPField.Name("Herald-Signature")!] ?? ""
                if path == "hang" { try await Task.sleep(for: .seconds(30)) }
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
            onServerRunning: { channel in self.port.withLock { $0 = channel.localAddress?.port ?? 0 } })
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
        types: [String] = ["push.completed"]
    ) async throws -> UUID {
        let id = UUID()
        let sealed = try cipher.seal(secret) { WebhookSecret.associatedData(endpointID: id, sealingKeyID: $0) }
        _ = try await WebhookRepository(client: env.database, logger: env.logger).createEndpoint(
            id: id, appID: env.app.id, url: "http://127.0.0.1:\(port)/\(path)", description: path,
            eventTypes: types, maxConcurrency: 2,
            secret: WebhookSecret(sealed: sealed.sealed, sealingKeyID: sealed.keyID))
        return id
    }

    func dispatcher(_ env: CenterEnvironment, cipher: CredentialCipher, name: String) -> WebhookDispatcher {
        var settings = WebhookDispatcher.Settings()
        settings.pollInterval = .milliseconds(50)
        settings.requestTimeout = .seconds(1)
        settings.firstRetryDelay = .milliseconds(200)
        settings.maximumRetryDelay = .milliseconds(400)
        return WebhookDispatcher(
            settings: settings, center: name, webhooks: WebhookRepository(client: env.database, logger: env.logger),
            cipher: cipher, logger: env.logger)
    }

    @Test(
        "completed pushes reach every subscribed endpoint signed; one that fails for a while gets each event after retries; one that hangs holds back no other; a restarted dispatcher loses nothing"
    )
    func deliveries() async throws {
        try await withCenterEnvironment { env in
            let cipher = try CredentialCipher(masterKeyBase64: Self.masterKey)
            let receiver = WebhookReceiver(failures: 3)
            let serving = Task { try await receiver.run() }
            defer { serving.cancel() }
            #expect(try await env.eventually(timeout: .seconds(10)) { receiver.port.withLock { $0 } > 0 })
            let port = receiver.port.withLock { $0 }
            let secret = Array("whsec-test-secret-0123456789".utf8)
            _ = try await endpoint(env, path: "ok", port: port, secret: secret, cipher: cipher)
            _ = try await endpoint(env, path: "flaky", port: port, secret: secret, cipher: cipher)
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

            // Retention: old attempts go; an old event stays while a delivery of it is pending
            // (/hang's), and goes once none is.
            secondRun.cancel()
            _ = try? await secondRun.value
            let webhooks = WebhookRepository(client: env.database, logger: env.logger)
            try await env.database.query(
                "UPDATE webhook_attempts SET attempted_at = now() - interval '8 days'", logger: env.logger)
            try await env.database.query(
                "UPDATE webhook_events SET created_at = now() - interval '31 days'", logger: env.logger)
            func count(_ table: String) async throws -> Int64 {
                let rows = try await env.database.query(
                    PostgresQuery(unsafeSQL: "SELECT count(*) FROM \(table)"), logger: env.logger)
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
}
