import APNsSimulator
import APNsTestSupport
import Crypto
import Foundation
import HeraldHTTP2
import NIOCore
import NIOSSL
import ServiceLifecycle
import Synchronization
import Testing

@testable import HeraldAPNs

enum ClientFixture {
    static let bundleID = "com.herald.client"
    static let teamID = "TEAMCLIENT"
    static let keyID = "KEYCLIENT1"
    static let key = P256.Signing.PrivateKey()
    static let unregisteredAt: Int64 = 1_700_000_000_999

    static func token(_ index: Int) -> String { String(format: "%064x", index + 1) }

    static func simulator(devices: Int = 2000, _ adjust: (inout APNsSimulatorConfiguration) -> Void = { _ in })
        -> APNsSimulatorConfiguration
    {
        var configuration = APNsSimulatorConfiguration()
        configuration.port = 0
        configuration.adminPort = nil
        configuration.threads = 1
        configuration.keys = [
            ProviderKey(keyID: keyID, teamID: teamID, publicKeyPEM: key.publicKey.pemRepresentation, topics: [bundleID])
        ]
        configuration.devices =
            (0..<devices).map { SimulatedDevice(token: token($0), topic: bundleID) }
            + [
                SimulatedDevice(token: "dead0001", topic: bundleID, unregisteredAt: unregisteredAt),
                SimulatedDevice(token: "0ther001", topic: "com.other"),
            ].filter { !$0.token.contains("t") }
            + [SimulatedDevice(token: "0a0b0c0d", topic: "com.other")]
        adjust(&configuration)
        return configuration
    }

    static func notification(_ index: Int, token: String? = nil, payload: String = #"{"aps":{"alert":"hi"}}"#)
        -> APNsNotification
    {
        APNsNotification(
            deviceToken: token ?? Self.token(index), topic: bundleID, collapseID: "c\(index)",
            apnsID: APNsNotification.deterministicID(
                pushID: UUID(uuidString: "00000000-0000-0000-0000-000000000001")!, deviceID: Int64(index)),
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
        credential: credential
            ?? .token(
                APNsSigningKey(privateKey: ClientFixture.key, keyID: ClientFixture.keyID, teamID: ClientFixture.teamID)),
        client: adjust, clock: clock, body)
}

/// The client's two ways of sending: one notification per call (a task each), or many in one
/// call (the worker's path). Every rule must hold on both.
enum SendPath: String, CaseIterable, CustomTestStringConvertible {
    case oneAtATime, together
    var testDescription: String { rawValue }
}

/// Sends every notification at once, in `batches` concurrent calls when `together`; returns
/// the outcomes in order.
func sendAll(
    _ client: APNsClient, _ notifications: [APNsNotification], _ path: SendPath = .oneAtATime, batches: Int = 1
) async -> [APNsOutcome] {
    if path == .together {
        let size = max(1, (notifications.count + batches - 1) / batches)
        let chunks = stride(from: 0, to: notifications.count, by: size).map {
            Array(notifications[$0..<min($0 + size, notifications.count)])
        }
        return await withTaskGroup(of: (Int, [APNsOutcome]).self) { group in
            for (index, chunk) in chunks.enumerated() {
                group.addTask { (index, await client.send(chunk).outcomes) }
            }
            var results = [[APNsOutcome]](repeating: [], count: chunks.count)
            for await (index, outcomes) in group { results[index] = outcomes }
            return results.flatMap { $0 }
        }
    }
    return await withTaskGroup(of: (Int, APNsOutcome).self) { group in
        for (index, notification) in notifications.enumerated() {
            group.addTask { (index, await client.send(notification)) }
        }
        var outcomes = [APNsOutcome?](repeating: nil, count: notifications.count)
        for await (index, outcome) in group { outcomes[index] = outcome }
        return outcomes.map { $0! }
    }
}

/// Sends until every notification has a final outcome, as the worker will (without back-off).
func sendUntilFinal(
    _ client: APNsClient, _ notifications: [APNsNotification], _ path: SendPath = .oneAtATime,
    rounds: Int = 50
) async -> (outcomes: [APNsOutcome], retried: Int) {
    var outcomes = await sendAll(client, notifications, path)
    var retried = 0
    for _ in 0..<rounds {
        let again = outcomes.indices.filter { outcomes[$0].isRetryable }
        if again.isEmpty { break }
        retried += again.count
        let second = await sendAll(client, again.map { notifications[$0] }, path)
        for (index, outcome) in zip(again, second) { outcomes[index] = outcome }
    }
    return (outcomes, retried)
}

@Suite("APNs client against apns-sim", .serialized)
struct APNsClientTests {
    @Test(
        "happy path: 2000 notifications over two connections, each accepted once with its apns-id and collapse id",
        arguments: SendPath.allCases)
    func happyPath(path: SendPath) async throws {
        try await withClient { simulator, client in
            let notifications = (0..<2000).map { ClientFixture.notification($0) }
            let outcomes = await sendAll(client, notifications, path, batches: 4)
            #expect(outcomes.allSatisfy { if case .accepted = $0 { true } else { false } })
            #expect(outcomes.first == .accepted)
            let recorded = simulator.ledger.notifications()
            #expect(recorded.count == 2000)
            #expect(Set(recorded.map(\.apnsID)) == Set(notifications.map { $0.apnsID! }))
            #expect(Set(recorded.map(\.token)).count == 2000)
            #expect(recorded.first { $0.token == ClientFixture.token(5) }?.collapseID == "c5")
            // Both connections open at the start. A connection's limit is 1 until it has carried
            // a request with a valid token (apns-sim starts every connection there, as APNs
            // does), then 1000; on a loaded machine the first connection may carry all 2000 and
            // the second stay at 1, or its raised SETTINGS still be on their way.
            var limits = client.status.streamLimits
            for _ in 0..<100 where limits != [1000, 1000] {
                try await Task.sleep(for: .milliseconds(100))
                limits = client.status.streamLimits
            }
            #expect(limits.count == 2 && limits.contains(1000) && limits.allSatisfy { $0 == 1000 || $0 == 1 })
            #expect(client.status.inFlight == 0)
        }
    }

    @Test("each APNs reason becomes the right outcome; a payload over the limit never leaves")
    func reasons() async throws {
        try await withClient { simulator, client in
            #expect(
                await client.send(ClientFixture.notification(0, token: "beef0000"))
                    == .rejected(.badDeviceToken, status: 400, unregisteredAt: nil))
            #expect(
                await client.send(ClientFixture.notification(0, token: "dead0001"))
                    == .rejected(.unregistered, status: 410, unregisteredAt: ClientFixture.unregisteredAt))
            #expect(
                await client.send(ClientFixture.notification(0, token: "0a0b0c0d"))
                    == .rejected(.deviceTokenNotForTopic, status: 400, unregisteredAt: nil))
            var wrongTopic = ClientFixture.notification(1)
            wrongTopic.topic = "com.not.ours"
            #expect(await client.send(wrongTopic) == .rejected(.topicDisallowed, status: 400, unregisteredAt: nil))
            let tooLarge = ClientFixture.notification(
                2, payload: #"{"aps":{"alert":""# + String(repeating: "x", count: 5000) + #""}}"#)
            #expect(await client.send(tooLarge) == .failed(.invalid))
            #expect(simulator.ledger.counts.requests == 4)
            #expect(simulator.ledger.counts.accepted == 0)
        }
    }

    @Test("sent together: each reason in its place, the invalid one never leaves, the rest accepted")
    func reasonsTogether() async throws {
        try await withClient { simulator, client in
            var wrongTopic = ClientFixture.notification(1)
            wrongTopic.topic = "com.not.ours"
            let tooLarge = ClientFixture.notification(
                2, payload: #"{"aps":{"alert":""# + String(repeating: "x", count: 5000) + #""}}"#)
            let notifications = [
                ClientFixture.notification(0, token: "beef0000"), ClientFixture.notification(0, token: "dead0001"),
                ClientFixture.notification(0, token: "0a0b0c0d"), wrongTopic, tooLarge, ClientFixture.notification(3),
            ]
            let result = await client.send(notifications)
            #expect(
                result.outcomes == [
                    .rejected(.badDeviceToken, status: 400, unregisteredAt: nil),
                    .rejected(.unregistered, status: 410, unregisteredAt: ClientFixture.unregisteredAt),
                    .rejected(.deviceTokenNotForTopic, status: 400, unregisteredAt: nil),
                    .rejected(.topicDisallowed, status: 400, unregisteredAt: nil),
                    .failed(.invalid),
                    .accepted,
                ])
            #expect(result.latencies[4] == 0)
            #expect(result.latencies[5] > 0)
            #expect(simulator.ledger.counts.requests == 5)
            #expect(simulator.ledger.counts.accepted == 1)
            #expect(client.status.inFlight == 0)
        }
    }

    @Test("sent together and cancelled: what was sent finishes, what was not ends clientStopped, no stream is kept")
    func cancelledTogether() async throws {
        var faults = APNsFaults()
        faults.latency = .init(distribution: .uniform, milliseconds: 5, maxMilliseconds: 10)
        let configuration = ClientFixture.simulator { $0.faults = faults }
        try await withClient(simulator: configuration, client: { $0.maxInFlight = 10 }) { simulator, client in
            let notifications = (0..<1000).map { ClientFixture.notification($0) }
            let sending = Task { await client.send(notifications).outcomes }
            // Cancelled once some are through (at 10 in flight and 5–10 ms each, the whole batch
            // would take half a second or more).
            for _ in 0..<2000 where simulator.ledger.counts.accepted < 20 {
                try await Task.sleep(for: .milliseconds(5))
            }
            sending.cancel()
            let outcomes = await sending.value
            let accepted = outcomes.filter { if case .accepted = $0 { true } else { false } }.count
            #expect(accepted > 0)
            #expect(accepted < 1000)
            #expect(outcomes.filter { $0 == .failed(.clientStopped) }.count == 1000 - accepted)
            #expect(simulator.ledger.counts.accepted == accepted)
            #expect(client.status.inFlight == 0)
            // The client goes on working.
            #expect(
                await client.send([ClientFixture.notification(1500)]).outcomes == [
                    .accepted
                ])
        }
    }

    @Test(
        "an urgent send (a transactional push's batch) takes the next free streams ahead of a send that waited longer"
    )
    func urgentSendsGoFirst() async throws {
        var faults = APNsFaults()
        faults.latency = .init(distribution: .fixed, milliseconds: 100)
        try await withClient(
            simulator: ClientFixture.simulator(devices: 3100) { $0.faults = faults }, client: { $0.maxInFlight = 4 }
        ) { simulator, client in
            // Four campaign batches keep every stream busy and queue for more…
            let campaigns = (0..<4).map { batch in
                Task { await client.send((0..<25).map { ClientFixture.notification(1000 + batch * 25 + $0) }) }
            }
            // (A send waits in line only while every stream is taken.)
            await client.waitUntilWaiting(4)
            // …a fifth starts waiting behind them, then an urgent one, the same size.
            let waiting = Task {
                _ = await client.send((0..<4).map { ClientFixture.notification(2000 + $0) })
                return ContinuousClock.now
            }
            // The fifth waits in line before the urgent one comes.
            await client.waitUntilWaiting(5)
            let urgent = Task {
                _ = await client.send((0..<4).map { ClientFixture.notification(3000 + $0) }, urgent: true)
                return ContinuousClock.now
            }
            let urgentDone = await urgent.value
            let waitingDone = await waiting.value
            for campaign in campaigns { _ = await campaign.value }
            // Served in turn, the one that waited longer would finish first.
            #expect(urgentDone < waitingDone)
            #expect(simulator.ledger.counts.accepted == 108)
            #expect(client.status.inFlight == 0)
        }
    }

    @Test("a 429/503 storm ends with every notification delivered exactly once", arguments: SendPath.allCases)
    func storm(path: SendPath) async throws {
        var faults = APNsFaults()
        faults.tooManyRequests = 0.3
        faults.serviceUnavailable = 0.3
        try await withClient(simulator: ClientFixture.simulator { $0.faults = faults }) { simulator, client in
            let notifications = (0..<1000).map { ClientFixture.notification($0) }
            let (outcomes, retried) = await sendUntilFinal(client, notifications, path)
            #expect(outcomes.allSatisfy { if case .accepted = $0 { true } else { false } })
            #expect(retried > 300)
            #expect(simulator.ledger.counts.accepted == 1000)
            #expect(Set(simulator.ledger.notifications().map(\.apnsID)).count == 1000)
        }
    }

    @Test(
        "GOAWAY in the middle: streams APNs did not process are sent again; nothing lost, nothing twice",
        arguments: SendPath.allCases)
    func goAwayMidway(path: SendPath) async throws {
        var faults = APNsFaults()
        faults.goAwayAfterRequests = 150
        try await withClient(simulator: ClientFixture.simulator { $0.faults = faults }) { simulator, client in
            let notifications = (0..<2000).map { ClientFixture.notification($0) }
            let (outcomes, _) = await sendUntilFinal(client, notifications, path)
            #expect(outcomes.allSatisfy { if case .accepted = $0 { true } else { false } })
            let recorded = simulator.ledger.notifications()
            #expect(recorded.count == 2000)
            #expect(Set(recorded.map(\.apnsID)).count == 2000)
            #expect(simulator.ledger.counts.connectionsOpened > 2)
        }
    }

    @Test("streams that never answer end at the deadline and succeed when sent again", arguments: SendPath.allCases)
    func neverAnswered(path: SendPath) async throws {
        var faults = APNsFaults()
        faults.neverAnswer = 0.2
        try await withClient(
            simulator: ClientFixture.simulator { $0.faults = faults },
            client: { $0.requestTimeout = .milliseconds(300) }
        ) { simulator, client in
            let notifications = (0..<300).map { ClientFixture.notification($0) }
            let first = await sendAll(client, notifications, path)
            #expect(first.contains(.failed(.timeout)))
            simulator.faults = APNsFaults()
            let (outcomes, _) = await sendUntilFinal(client, notifications, path)
            #expect(outcomes.allSatisfy { if case .accepted = $0 { true } else { false } })
        }
    }

    @Test("in flight never exceeds maxInFlight; callers wait instead", arguments: SendPath.allCases)
    func boundedInFlight(path: SendPath) async throws {
        var faults = APNsFaults()
        faults.latency = .init(distribution: .uniform, milliseconds: 1, maxMilliseconds: 10)
        let configuration = ClientFixture.simulator { $0.faults = faults }
        try await withClient(simulator: configuration, client: { $0.maxInFlight = 25 }) { simulator, client in
            let highest = Atomic<Int>(0)
            let done = Atomic<Bool>(false)
            async let sampler: Void = {
                while !done.load(ordering: .relaxed) {
                    let now = client.status.inFlight
                    _ = highest.max(now, ordering: .relaxed)
                    try? await Task.sleep(for: .microseconds(200))
                }
            }()
            let outcomes = await sendAll(client, (0..<1000).map { ClientFixture.notification($0) }, path, batches: 4)
            done.store(true, ordering: .relaxed)
            await sampler
            #expect(outcomes.allSatisfy { if case .accepted = $0 { true } else { false } })
            #expect(highest.load(ordering: .relaxed) <= 25)
            #expect(highest.load(ordering: .relaxed) > 1)
        }
    }

    @Test(
        "a server allowing fewer streams than a refill group still gets every notification: waiters are woken with what is free",
        .timeLimit(.minutes(1)), arguments: SendPath.allCases)
    func fewerStreamsThanRefillGroup(path: SendPath) async throws {
        var faults = APNsFaults()
        faults.latency = .init(distribution: .uniform, milliseconds: 1, maxMilliseconds: 5)
        let configuration = ClientFixture.simulator {
            $0.faults = faults
            $0.maxConcurrentStreams = 4
        }
        try await withClient(simulator: configuration, client: { $0.connections = 1 }) { simulator, client in
            #expect(APNsPoolState.refillGroup(maxInFlight: APNsClientConfiguration().maxInFlight) > 4)
            let outcomes = await sendAll(client, (0..<300).map { ClientFixture.notification($0) }, path, batches: 3)
            #expect(outcomes.allSatisfy { if case .accepted = $0 { true } else { false } })
            #expect(client.status.streamLimits == [4])
        }
    }

    @Test("one stream per connection until the first success, then the server's limit")
    func streamLimitBeforeSuccess() async throws {
        try await withClient(client: { $0.connections = 1 }) { simulator, client in
            for _ in 0..<200 where client.status.streamLimits != [1] { try await Task.sleep(for: .milliseconds(10)) }
            #expect(client.status.streamLimits == [1])
            #expect(
                await client.send(ClientFixture.notification(0))
                    == .accepted)
            for _ in 0..<200 where client.status.streamLimits != [1000] { try await Task.sleep(for: .milliseconds(10)) }
            #expect(client.status.streamLimits == [1000])
        }
    }

    @Test(
        "sent together on a new connection: one stream until the first success, then many (even if the server offers more)"
    )
    func streamLimitBeforeSuccessTogether() async throws {
        var faults = APNsFaults()
        // Answers take 200 ms: long enough that the sampler sees the group in flight even on a
        // loaded machine (with 30 ms, a make test run once saw only the first request).
        faults.latency = .init(distribution: .uniform, milliseconds: 200, maxMilliseconds: 200)
        let simulator = ClientFixture.simulator {
            $0.faults = faults
            $0.streamsBeforeAuthentication = 1000  // the client's own rule is what is tested
        }
        try await withClient(simulator: simulator, client: { $0.connections = 1 }) { simulator, client in
            for _ in 0..<200 where client.status.streamLimits != [1000] { try await Task.sleep(for: .milliseconds(10)) }
            let seen = Mutex<[Int]>([])
            let done = Atomic<Bool>(false)
            async let sampler: Void = {
                while !done.load(ordering: .relaxed) {
                    let now = client.status.inFlight
                    if now > 0 { seen.withLock { $0.append(now) } }
                    try? await Task.sleep(for: .milliseconds(1))
                }
            }()
            let outcomes = await client.send((0..<50).map { ClientFixture.notification($0) }).outcomes
            done.store(true, ordering: .relaxed)
            await sampler
            #expect(outcomes.allSatisfy { if case .accepted = $0 { true } else { false } })
            let observed = seen.withLock { $0 }
            // While the first request waits its 200 ms, it is alone; after it, the rest go together.
            #expect(observed.first == 1)
            #expect((observed.max() ?? 0) > 1)
        }
    }

    @Test(
        "an expired provider token is renewed and the notification sent again (clock injected)",
        arguments: SendPath.allCases)
    func tokenRenewal(path: SendPath) async throws {
        func send(_ client: APNsClient, _ notification: APNsNotification) async -> APNsOutcome {
            await sendAll(client, [notification], path)[0]
        }
        let offset = Atomic<Int64>(-3700)  // the provider's clock starts an hour and more behind
        let clock = APNsClock { Int64(Date().timeIntervalSince1970) + offset.load(ordering: .relaxed) }
        try await withClient(client: { $0.connections = 1 }, clock: clock) { simulator, client in
            // The token is issued "now" by the provider's clock: APNs finds it over an hour old.
            #expect(
                await send(client, ClientFixture.notification(0))
                    == .rejected(.expiredProviderToken, status: 403, unregisteredAt: nil))
            // Ten minutes later by that clock the token may not be renewed yet (20-minute rule).
            offset.store(-3700 + 10 * 60, ordering: .relaxed)
            #expect(
                await send(client, ClientFixture.notification(1))
                    == .rejected(.expiredProviderToken, status: 403, unregisteredAt: nil))
            // Twenty-one minutes after it was issued, the connection renews it and the send succeeds.
            offset.store(-3700 + 21 * 60, ordering: .relaxed)
            #expect(
                await send(client, ClientFixture.notification(2))
                    == .accepted)
            #expect(simulator.ledger.counts.byReason["ExpiredProviderToken"] == 4)  // two sends, each tried twice
            #expect(simulator.ledger.counts.byReason["TooManyProviderTokenUpdates"] == nil)
        }
    }
}

@Suite("APNs client with a certificate")
struct APNsClientCertificateTests {
    @Test(
        "certificate-based authentication over mutual TLS: no provider token is sent, the certificate's topic is used")
    func certificate() async throws {
        // A self-signed client certificate whose common name is the topic, trusted by the simulator.
        let (clientIdentity, keyPEM) = try SimulatorIdentity.selfSigned()
        let credential = try APNsCredential.certificate(
            pemCertificate: clientIdentity.certificatePEM, pemPrivateKey: keyPEM)
        let topic = "apns-sim"  // SimulatorIdentity's common name
        let simulator = ClientFixture.simulator {
            $0.clientCertificateAuthorities = clientIdentity.certificateChain
            $0.devices.append(SimulatedDevice(token: "c0ffee00", topic: topic))
        }
        try await withClient(simulator: simulator, credential: credential) { simulator, client in
            let notification = APNsNotification(
                deviceToken: "c0ffee00", topic: topic, payload: Array(#"{"aps":{"alert":"cert"}}"#.utf8))
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
        #expect(throws: APNsCredentialError.self) {
            try APNsCredential.certificate(pemCertificate: "nope", pemPrivateKey: "nope")
        }
        #expect(throws: APNsCredentialError.self) {
            try APNsSigningKey(
                pem: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----", keyID: "K", teamID: "T")
        }
        #expect(throws: APNsCredentialError.self) {
            try APNsCredential.certificate(pkcs12: [1, 2, 3], passphrase: "x")
        }
    }
}
