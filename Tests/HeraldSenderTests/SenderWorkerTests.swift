import APNsSimulator
import Crypto
import Foundation
import HeraldAPNs
import HeraldCore
@testable import HeraldKafka
import HeraldRecords
import HeraldSender
import HeraldStore
import Logging
import PostgresNIO
import ServiceLifecycle
import Testing

/// A 32-byte token per device number, the same each time.
private func token(_ device: Int) -> Data {
    withUnsafeBytes(of: UInt32(device).bigEndian) { Data($0) } + Data((4..<32).map { UInt8($0 * 7) })
}
private func hex(_ data: Data) -> String { data.map { String(format: "%02x", $0) }.joined() }

/// The sender worker end to end: job batches from the development broker, the app's credential
/// from PostgreSQL (sealed with a master key), notifications to apns-sim over TLS, outcomes back
/// on the broker. `make test` starts PostgreSQL and the broker.
@Suite("herald-sender worker through Kafka, PostgreSQL and apns-sim", .serialized)
struct SenderWorkerTests {
    let logger = Logger(label: "test.sender")

    @Test("2,000 targets in 20 batches: one outcome per target, apns-sim got exactly the deliverable ones, offsets stored")
    func batchesThroughTheBroker() async throws {
        let configuration = try await HeraldConfiguration.load()
        let masterKey = Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        let cipher = try CredentialCipher(masterKeyBase64: masterKey)
        let signingKey = P256.Signing.PrivateKey()
        let bundleID = "com.herald.worker.\(UUID().uuidString.prefix(6).lowercased())"
        let suffix = UUID().uuidString.prefix(8)
        let jobsTopic = "herald.test.jobs.\(suffix)"
        let outcomesTopic = "herald.test.outcomes.\(suffix)"

        // apns-sim knows the app's key and 1,900 of the 2,000 devices; 50 more are unregistered.
        var simulatorConfiguration = APNsSimulatorConfiguration()
        simulatorConfiguration.port = 0
        simulatorConfiguration.adminPort = nil
        simulatorConfiguration.threads = 1
        simulatorConfiguration.keys = [ProviderKey(keyID: "WORKERKEY1", teamID: "WORKERTEAM", publicKeyPEM: signingKey.publicKey.pemRepresentation, topics: [bundleID])]
        simulatorConfiguration.devices = (1...1900).map { SimulatedDevice(token: hex(token($0)), topic: bundleID) }
            + (1901...1950).map { SimulatedDevice(token: hex(token($0)), topic: bundleID, unregisteredAt: 1_700_000_000_000 + Int64($0)) }
        let simulator = try await APNsSimulator.start(simulatorConfiguration)
        defer { Task { await simulator.shutdown() } }

        try await HeraldDatabase.withClient(settings: configuration.postgres, logger: logger) { database in
            try await MigrationRunner(client: database, logger: logger).migrate()
            let app = try await AppRepository(client: database, logger: logger).create(name: "worker test", bundleID: bundleID)
            let credentialID = UUID()
            try await CredentialRepository(client: database, logger: logger).upsert(APNsCredentialRecord(
                id: credentialID, appID: app.id, environment: .sandbox, kind: .token, keyID: "WORKERKEY1", teamID: "WORKERTEAM",
                sealedSecret: try cipher.seal(Array(signingKey.pemRepresentation.utf8), owner: "\(app.id)/\(credentialID)")))

            // 20 job batches of 100 targets, as herald-center cuts them.
            let pushID = UUID()
            let pushIDBytes = withUnsafeBytes(of: pushID.uuid) { Data($0) }
            let appIDBytes = withUnsafeBytes(of: app.id.uuid) { Data($0) }
            let batches = (0..<20).map { sequence in
                Herald_V1_JobBatch(
                    pushID: pushIDBytes, appID: appIDBytes, sequence: UInt32(sequence), environment: .sandbox, apnsTopic: bundleID,
                    pushType: .alert, priority: 10, expirationS: 0, collapseID: "", payload: Data(#"{"aps":{"alert":"worker"}}"#.utf8),
                    targets: (1...100).map { Herald_V1_JobBatch.Target(deviceID: UInt64(sequence * 100 + $0), token: token(sequence * 100 + $0)) },
                    createdAtMs: 0)
            }
            let jobsProducer = try KafkaProducer(configuration: configuration.kafka.producerConfiguration(clientID: "test-jobs"), logger: logger)
            try await jobsProducer.send(try batches.map {
                KafkaProducerMessage(topic: jobsTopic, key: Array($0.batchID), value: try $0.encodedRecord())
            })

            // The worker, as herald-sender runs it.
            var endpoints = SenderEndpoints()
            endpoints.sandbox = APNsEndpoint(host: "localhost", port: simulator.port, trustedCertificates: simulator.identity.certificateChain)
            let credentials = CredentialStore(
                repository: CredentialRepository(client: database, logger: logger), cipher: cipher, endpoints: endpoints,
                clientConfiguration: APNsClientConfiguration(), logger: logger)
            let group = "herald-sender-test-\(suffix)"
            let consumer = try KafkaConsumer(
                configuration: configuration.kafka.consumerConfiguration(groupID: group, topics: [jobsTopic], clientID: "test-sender"),
                logger: logger)
            let producer = try KafkaProducer(configuration: configuration.kafka.producerConfiguration(clientID: "test-sender"), logger: logger)
            let worker = SenderWorker(
                consumer: consumer, producer: producer, credentials: credentials,
                cancellations: StoredPushCancellations(pushes: PushRepository(client: database, logger: logger)),
                sender: JobBatchSender(retryPolicy: RetryPolicy(maxAttempts: 5, baseDelayMilliseconds: 5, maxDelayMilliseconds: 50)),
                maxBatchesInFlight: 4, outcomesTopic: outcomesTopic, logger: logger)
            let services = ServiceGroup(configuration: .init(services: [producer, consumer, credentials, worker], logger: logger))

            let outcomesConsumer = try KafkaConsumer(
                configuration: configuration.kafka.consumerConfiguration(groupID: "\(group)-reader", topics: [outcomesTopic], clientID: "test-outcomes"),
                logger: logger)
            let outcomes = try await withThrowingTaskGroup(of: [Herald_V1_OutcomeBatch]?.self) { tasks in
                tasks.addTask {
                    try await services.run()
                    return nil
                }
                tasks.addTask {
                    var byBatch: [Data: Herald_V1_OutcomeBatch] = [:]
                    let deadline = ContinuousClock.now + .seconds(90)
                    while byBatch.count < 20, ContinuousClock.now < deadline {
                        guard let (messages, _) = try await outcomesConsumer.nextBatch() else { break }
                        for message in messages {
                            let outcome = try Herald_V1_OutcomeBatch.decodeRecord(message.value)
                            byBatch[outcome.batchID] = outcome
                        }
                    }
                    await services.triggerGracefulShutdown()
                    return Array(byBatch.values)
                }
                var collected: [Herald_V1_OutcomeBatch] = []
                for try await result in tasks { if let result { collected = result } }
                return collected
            }
            try await outcomesConsumer.close()
            await jobsProducer.shutdown()

            #expect(outcomes.count == 20)
            let accepted = outcomes.flatMap(\.acceptedDeviceIds)
            let failures = outcomes.flatMap(\.failures)
            #expect(accepted.count + failures.count == 2000)
            #expect(Set(accepted) == Set((1...1900).map(UInt64.init)))
            let unregistered = failures.filter { $0.reason == "Unregistered" }
            #expect(unregistered.count == 50)
            #expect(unregistered.allSatisfy { $0.unregisteredAtMs == 1_700_000_000_000 + Int64($0.deviceID) })
            #expect(failures.filter { $0.reason == "BadDeviceToken" }.count == 50)
            #expect(simulator.ledger.counts.accepted == 1900)
            #expect(Set(simulator.ledger.notifications().map(\.token)).count == 1900)
            #expect(worker.finishedBatches.load(ordering: .relaxed) == 20)

            // Every batch's offset was stored and committed: a new member of the group gets nothing.
            let again = try KafkaConsumer(
                configuration: configuration.kafka.consumerConfiguration(groupID: group, topics: [jobsTopic], clientID: "test-again"),
                logger: logger)
            var redelivered = 0
            let deadline = ContinuousClock.now + .seconds(8)
            while ContinuousClock.now < deadline {
                guard let (messages, _) = try await again.nextBatch() else { break }
                redelivered += messages.count
            }
            try await again.close()
            #expect(redelivered == 0)
        }
    }
}
