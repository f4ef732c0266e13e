import APNsSimulator
import APNsTestSupport
import Crypto
import Foundation
import HeraldAPNs
import HeraldHTTP2
import NIOCore
import NIOSSL
import ServiceLifecycle
import Synchronization
import Testing

enum ClientFixture {
    static let bundleID = "com.herald.client"
    static let teamID = "TEAMCLIENT"
    static let keyID = "KEYCLIENT1"
    static let key = P256.Signing.PrivateKey()
    static let unregisteredAt: Int64 = 1_700_000_000_999

    static func token(_ index: Int) -> String { String(format: "%064x", index + 1) }

    static func simulator(devices: Int = 2000, _ adjust: (inout APNsSimulatorConfiguration) -> Void = { _ in }) -> APNsSimulatorConfiguration {
        var configuration = APNsSimulatorConfiguration()
        configuration.port = 0
        configuration.adminPort = nil
        configuration.threads = 1
        configuration.keys = [ProviderKey(keyID: keyID, teamID: teamID, publicKeyPEM: key.publicKey.pemRepresentation, topics: [bundleID])]
        configuration.devices = (0..<devices).map { SimulatedDevice(token: token($0), topic: bundleID) }
            + [SimulatedDevice(token: "dead0001", topic: bundleID, unregisteredAt: unregisteredAt),
               SimulatedDevice(token: "0ther001", topic: "com.other")].filter { !$0.token.contains("t") }
            + [SimulatedDevice(token: "0a0b0c0d", topic: "com.other")]
        adjust(&configuration)
        return configuration
    }

    static func notification(_ index: Int, token: String? = nil, payload: String = #"{"aps":{"alert":"hi"}}"#) -> APNsNotification {
        APNsNotification(deviceToken: token ?? Self.token(index), topic: bundleID, collapseID: "c\(index)",
                         apnsID: APNsNotification.deterministicID(pushID: UUID(uuidString: "00000000-0000-0000-0000-000000000001")!, deviceID: Int64(index)),
                         payload: Array(payload.utf8))
    }
}

/// A simulator and a client running against it (the fixture's key unless `credential` is given).
func withClient(
    simulator configuration: APNsSimulatorConfiguration = ClientFixture.simulator(),
    client adjust: (inout APNsClientConfiguration) -> Void = { _ in },
    clock: APNsClock = .system,
    credential: APNsCredential? = nil,
    _ body: (APNsSimulator, APNsClient) async throws -> Void
) async throws {
    try await withAPNsClient(
        simulator: configuration,
        credential: credential ?? .token(APNsSigningKey(privateKey: ClientFixture.key, keyID: ClientFixture.keyID, teamID: ClientFixture.teamID)),
        client: adjust, clock: clock, body)
}

/// Sends every notification at once; returns the outcomes in order.
func sendAll(_ client: APNsClient, _ notifications: [APNsNotification]) async -> [APNsOutcome] {
    await withTaskGroup(of: (Int, APNsOutcome).self) { group in
        for (index, notification) in notifications.enumerated() {
            group.addTask { (index, await client.send(notification)) }
        }
        var outcomes = [APNsOutcome?](repeating: nil, count: notifications.count)
        for await (index, outcome) in group { outcomes[index] = outcome }
        return outcomes.map { $0! }
    }
}

/// Sends until every notification has a final outcome, as the worker will (without back-off).
func sendUntilFinal(_ client: APNsClient, _ notifications: [APNsNotification], rounds: Int = 50) async -> (outcomes: [APNsOutcome], retried: Int) {
    var outcomes = await sendAll(client, notifications)
    var retried = 0
    for _ in 0..<rounds {
        let again = outcomes.indices.filter { outcomes[$0].isRetryable }
        if again.isEmpty { break }
        retried += again.count
        let second = await sendAll(client, again.map { notifications[$0] })
        for (index, outcome) in zip(again, second) { outcomes[index] = outcome }
    }
    return (outcomes, retried)
}

@Suite("APNs client against apns-sim", .serialized)
struct APNsClientTests {
    @Test("happy path: 2000 notifications over two connections, each accepted once with its apns-id and collapse id")
    func happyPath() async throws {
        try await withClient { simulator, client in
            let notifications = (0..<2000).map { ClientFixture.notification($0) }
            let outcomes = await sendAll(client, notifications)
            #expect(outcomes.allSatisfy { if case .accepted = $0 { true } else { false } })
            #expect(outcomes.first == .accepted(apnsID: notifications[0].apnsID!))
            let recorded = simulator.ledger.notifications()
            #expect(recorded.count == 2000)
            #expect(Set(recorded.map(\.apnsID)) == Set(notifications.map { $0.apnsID! }))
            #expect(Set(recorded.map(\.token)).count == 2000)
            #expect(recorded.first { $0.token == ClientFixture.token(5) }?.collapseID == "c5")
            #expect(client.status.streamLimits == [1000, 1000])
            #expect(client.status.inFlight == 0)
        }
    }

    @Test("each APNs reason becomes the right outcome; a payload over the limit never leaves")
    func reasons() async throws {
        try await withClient { simulator, client in
            #expect(await client.send(ClientFixture.notification(0, token: "beef0000")) == .rejected(.badDeviceToken, status: 400, unregisteredAt: nil))
            #expect(await client.send(ClientFixture.notification(0, token: "dead0001")) == .rejected(.unregistered, status: 410, unregisteredAt: ClientFixture.unregisteredAt))
            #expect(await client.send(ClientFixture.notification(0, token: "0a0b0c0d")) == .rejected(.deviceTokenNotForTopic, status: 400, unregisteredAt: nil))
            var wrongTopic = ClientFixture.notification(1)
            wrongTopic.topic = "com.not.ours"
            #expect(await client.send(wrongTopic) == .rejected(.topicDisallowed, status: 400, unregisteredAt: nil))
            let tooLarge = ClientFixture.notification(2, payload: #"{"aps":{"alert":""# + String(repeating: "x", count: 5000) + #""}}"#)
            #expect(await client.send(tooLarge) == .failed(.invalid))
            #expect(simulator.ledger.counts.requests == 4)
            #expect(simulator.ledger.counts.accepted == 0)
        }
    }

    @Test("a 429/503 storm ends with every notification delivered exactly once")
    func storm() async throws {
        var faults = APNsFaults()
        faults.tooManyRequests = 0.3
        faults.serviceUnavailable = 0.3
        try await withClient(simulator: ClientFixture.simulator { $0.faults = faults }) { simulator, client in
            let notifications = (0..<1000).map { ClientFixture.notification($0) }
            let (outcomes, retried) = await sendUntilFinal(client, notifications)
            #expect(outcomes.allSatisfy { if case .accepted = $0 { true } else { false } })
            #expect(retried > 300)
            #expect(simulator.ledger.counts.accepted == 1000)
            #expect(Set(simulator.ledger.notifications().map(\.apnsID)).count == 1000)
        }
    }

    @Test("GOAWAY in the middle: streams APNs did not process are sent again; nothing lost, nothing twice")
    func goAwayMidway() async throws {
        var faults = APNsFaults()
        faults.goAwayAfterRequests = 150
        try await withClient(simulator: ClientFixture.simulator { $0.faults = faults }) { simulator, client in
            let notifications = (0..<2000).map { ClientFixture.notification($0) }
            let (outcomes, _) = await sendUntilFinal(client, notifications)
            #expect(outcomes.allSatisfy { if case .accepted = $0 { true } else { false } })
            let recorded = simulator.ledger.notifications()
            #expect(recorded.count == 2000)
            #expect(Set(recorded.map(\.apnsID)).count == 2000)
            #expect(simulator.ledger.counts.connectionsOpened > 2)
        }
    }

    @Test("streams that never answer end at the deadline and succeed when sent again")
    func neverAnswered() async throws {
        var faults = APNsFaults()
        faults.neverAnswer = 0.2
        try await withClient(simulator: ClientFixture.simulator { $0.faults = faults }, client: { $0.requestTimeout = .milliseconds(300) }) { simulator, client in
            let notifications = (0..<300).map { ClientFixture.notification($0) }
            let first = await sendAll(client, notifications)
            #expect(first.contains(.failed(.timeout)))
            simulator.faults = APNsFaults()
            let (outcomes, _) = await sendUntilFinal(client, notifications)
            #expect(outcomes.allSatisfy { if case .accepted = $0 { true } else { false } })
        }
    }

    @Test("in flight never exceeds maxInFlight; callers wait instead")
    func boundedInFlight() async throws {
        var faults = APNsFaults()
        faults.latency = .init(distribution: .uniform, milliseconds: 1, maxMilliseconds: 10)
        try await withClient(simulator: ClientFixture.simulator { $0.faults = faults }, client: { $0.maxInFlight = 25 }) { simulator, client in
            let highest = Atomic<Int>(0)
            let done = Atomic<Bool>(false)
            async let sampler: Void = {
                while !done.load(ordering: .relaxed) {
                    let now = client.status.inFlight
                    _ = highest.max(now, ordering: .relaxed)
                    try? await Task.sleep(for: .microseconds(200))
                }
            }()
            let outcomes = await sendAll(client, (0..<1000).map { ClientFixture.notification($0) })
            done.store(true, ordering: .relaxed)
            await sampler
            #expect(outcomes.allSatisfy { if case .accepted = $0 { true } else { false } })
            #expect(highest.load(ordering: .relaxed) <= 25)
            #expect(highest.load(ordering: .relaxed) > 1)
        }
    }

    @Test("one stream per connection until the first success, then the server's limit")
    func streamLimitBeforeSuccess() async throws {
        try await withClient(client: { $0.connections = 1 }) { simulator, client in
            for _ in 0..<200 where client.status.streamLimits != [1] { try await Task.sleep(for: .milliseconds(10)) }
            #expect(client.status.streamLimits == [1])
            #expect(await client.send(ClientFixture.notification(0)) == .accepted(apnsID: ClientFixture.notification(0).apnsID!))
            for _ in 0..<200 where client.status.streamLimits != [1000] { try await Task.sleep(for: .milliseconds(10)) }
            #expect(client.status.streamLimits == [1000])
        }
    }

    @Test("an expired provider token is renewed and the notification sent again (clock injected)")
    func tokenRenewal() async throws {
        let offset = Atomic<Int64>(-3700)  // the provider's clock starts an hour and more behind
        let clock = APNsClock { Int64(Date().timeIntervalSince1970) + offset.load(ordering: .relaxed) }
        try await withClient(client: { $0.connections = 1 }, clock: clock) { simulator, client in
            // The token is issued "now" by the provider's clock: APNs finds it over an hour old.
            #expect(await client.send(ClientFixture.notification(0)) == .rejected(.expiredProviderToken, status: 403, unregisteredAt: nil))
            // Ten minutes later by that clock the token may not be renewed yet (20-minute rule).
            offset.store(-3700 + 10 * 60, ordering: .relaxed)
            #expect(await client.send(ClientFixture.notification(1)) == .rejected(.expiredProviderToken, status: 403, unregisteredAt: nil))
            // Twenty-one minutes after it was issued, the connection renews it and the send succeeds.
            offset.store(-3700 + 21 * 60, ordering: .relaxed)
            #expect(await client.send(ClientFixture.notification(2)) == .accepted(apnsID: ClientFixture.notification(2).apnsID!))
            #expect(simulator.ledger.counts.byReason["ExpiredProviderToken"] == 4)  // two sends, each tried twice
            #expect(simulator.ledger.counts.byReason["TooManyProviderTokenUpdates"] == nil)
        }
    }
}

@Suite("APNs client with a certificate")
struct APNsClientCertificateTests {
    @Test("certificate-based authentication over mutual TLS: no provider token is sent, the certificate's topic is used")
    func certificate() async throws {
        // A self-signed client certificate whose common name is the topic, trusted by the simulator.
        let (clientIdentity, keyPEM) = try SimulatorIdentity.selfSigned()
        let credential = try APNsCredential.certificate(pemCertificate: clientIdentity.certificatePEM, pemPrivateKey: keyPEM)
        let topic = "apns-sim"  // SimulatorIdentity's common name
        let simulator = ClientFixture.simulator {
            $0.clientCertificateAuthorities = clientIdentity.certificateChain
            $0.devices.append(SimulatedDevice(token: "c0ffee00", topic: topic))
        }
        try await withClient(simulator: simulator, credential: credential) { simulator, client in
            let notification = APNsNotification(deviceToken: "c0ffee00", topic: topic, payload: Array(#"{"aps":{"alert":"cert"}}"#.utf8))
            guard case .accepted = await client.send(notification) else {
                Issue.record("not accepted")
                return
            }
            var other = notification
            other.topic = ClientFixture.bundleID
            #expect(await client.send(other) == .rejected(.topicDisallowed, status: 400, unregisteredAt: nil))
            #expect(simulator.ledger.notifications().map(\.topic) == [topic])
        }
    }

    @Test("a credential that is not PEM is refused with what to fix")
    func badCredential() {
        #expect(throws: APNsCredentialError.self) { try APNsCredential.certificate(pemCertificate: "nope", pemPrivateKey: "nope") }
        #expect(throws: APNsCredentialError.self) { try APNsSigningKey(pem: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----", keyID: "K", teamID: "T") }
        #expect(throws: APNsCredentialError.self) { try APNsCredential.certificate(pkcs12: [1, 2, 3], passphrase: "x") }
    }
}
