import APNsSimulator
import Foundation
import HeraldAccess
import HeraldCore
import HeraldDomain
import HeraldGateway
import HeraldKafka
import HeraldMessaging
import HeraldRecords
import HeraldStore
import NIOCore
import NIOPosix
import NIOSSL
import ServiceLifecycle
import StoreTestSupport
import Synchronization
import Testing

@testable import HeraldSender

@Suite("herald-sender and herald-gateway: connected devices get their push over the long connection")
struct OnlineDeliveryTests {
    @Test(
        "channel auto: a connected device that acknowledges is delivered_online and never sent to APNs, a silent one and one not connected go through APNs; channel apns: all through APNs; channel online: nothing through APNs, the rest skipped offline; a recall: revoke frames to the connected, APNs to the rest"
    )
    func onlineFirstThenAPNs() async throws {
        try await withWorkerEnvironment(deliverable: 3) { environment in
            // Three registered devices of the app, with the tokens apns-sim knows, and a client key.
            let devices = DeviceRepository(client: environment.database, logger: environment.logger)
            var ids: [Int64] = []
            for number in 1...3 {
                ids.append(
                    try await devices.register(
                        DeviceRegistration(
                            appID: environment.appID, token: Array(deviceToken(number)), environment: .sandbox,
                            topic: environment.bundleID)
                    ).id)
            }
            let clientKey = APIKeySecret.generate(kind: .client)
            _ = try await APIKeyRepository(client: environment.database, logger: environment.logger).create(
                appID: environment.appID, kind: .client, key: clientKey)

            // A gateway, in this process, on ports of its own.
            let (settings, identity) = try await Self.gatewaySettings(environment)
            let gateway = try GatewayService(
                settings: settings, database: environment.database, cipher: environment.cipher,
                deliveryTokens: [DeliveryToken.derive(masterKey: environment.masterKey)], logger: environment.logger)
            let gatewayGroup = ServiceGroup(configuration: .init(services: [gateway], logger: environment.logger))
            let gatewayTask = Task { try await gatewayGroup.run() }
            defer { gatewayTask.cancel() }
            #expect(try await eventually(timeout: .seconds(30)) { gateway.server.port == settings.port })

            // Device 1 connected and acknowledging, device 2 connected and silent, device 3 away.
            let certificate = identity.certificateChain[0]
            let acknowledging = try await GatewayTestClient(
                port: settings.port, certificate: certificate, clientKey: clientKey, token: Array(deviceToken(1)),
                acknowledges: true)
            let silent = try await GatewayTestClient(
                port: settings.port, certificate: certificate, clientKey: clientKey, token: Array(deviceToken(2)),
                acknowledges: false)
            let presence = GatewayPresenceRepository(client: environment.database, logger: environment.logger)
            #expect(
                try await eventually(timeout: .seconds(30)) {
                    try await presence.connected(among: ids).count == 2
                })

            // The same three devices in three pushes, one per channel; the four batches are sent
            // at once, one of them at the gateway at a time.
            let (worker, services) = try makeWorker(environment, maxOnlineBatchesInFlight: 1)
            var batches: [Herald_V1_JobBatch.Channel: Herald_V1_JobBatch] = [:]
            for (channel, name) in [(Herald_V1_JobBatch.Channel.auto, "auto"), (.apns, "apns"), (.online, "online")] {
                let pushID = UUID()
                try await environment.store(pushID: pushID)
                var batch = Herald_V1_JobBatch(
                    pushID: pushID.recordBytes, appID: environment.appID.recordBytes, sequence: 0,
                    environment: .sandbox, apnsTopic: environment.bundleID, pushType: .alert, priority: 10,
                    expirationS: 0, collapseID: "sale-\(name)", payload: Data(#"{"aps":{"alert":"\#(name)"}}"#.utf8),
                    targets: zip(ids, 1...3).map {
                        Herald_V1_JobBatch.Target(deviceID: UInt64($0), token: deviceToken($1))
                    },
                    createdAtMs: 0)
                batch.channel = channel
                batches[channel] = batch
            }
            // And a recall of the auto push: connected devices get a revoke frame, the other APNs's recall.
            let recallID = UUID()
            try await environment.store(pushID: recallID)
            let recall = Herald_V1_JobBatch.with {
                $0 = Herald_V1_JobBatch(
                    pushID: recallID.recordBytes, appID: environment.appID.recordBytes, sequence: 0,
                    environment: .sandbox, apnsTopic: environment.bundleID, pushType: .background, priority: 5,
                    expirationS: 0, collapseID: "sale-auto",
                    payload: Data(#"{"aps":{"content-available":1},"herald":{"revoke":"recalled"}}"#.utf8),
                    targets: zip(ids, 1...3).map {
                        Herald_V1_JobBatch.Target(deviceID: UInt64($0), token: deviceToken($1))
                    },
                    createdAtMs: 0)
                $0.revokesPushID = batches[.auto]!.pushID
            }
            let producer = try KafkaProducer(
                configuration: environment.configuration.kafka.producerConfiguration(clientID: "test-jobs"),
                logger: environment.logger)
            try await producer.send(
                try (Array(batches.values) + [recall]).map { batch in
                    KafkaProducerMessage(
                        topic: environment.jobsTopic, key: Array(batch.batchID), value: try batch.encodedRecord())
                })
            await producer.shutdown()

            let batchIDs = Set(batches.values.map(\.batchID) + [recall.batchID])
            let outcomes = try await withThrowingTaskGroup(of: [Data: Herald_V1_OutcomeBatch]?.self) { tasks in
                tasks.addTask {
                    try await services.run()
                    return nil
                }
                tasks.addTask {
                    let outcomes = try await environment.collectOutcomes(batchIDs)
                    await services.triggerGracefulShutdown()
                    return outcomes
                }
                var outcomes: [Data: Herald_V1_OutcomeBatch] = [:]
                for try await result in tasks { if let result { outcomes = result } }
                return outcomes
            }
            func outcome(_ channel: Herald_V1_JobBatch.Channel) throws -> Herald_V1_OutcomeBatch {
                let batch = try #require(batches[channel])
                return try #require(outcomes[batch.batchID])
            }
            let device = ids.map { UInt64($0) }
            func sentToAPNs(_ name: String) -> Set<String> {
                Set(environment.simulator.ledger.notifications().filter { $0.payload.contains(name) }.map(\.token))
            }
            func pushes(_ client: GatewayTestClient, _ channel: Herald_V1_JobBatch.Channel) -> Int {
                client.pushes.filter { $0.pushID == batches[channel]?.pushID }.count
            }

            // auto: online first; the silent device and the one away through APNs.
            let auto = try outcome(.auto)
            #expect(auto.deliveredOnlineDeviceIds == [device[0]])
            #expect(auto.acceptedDeviceIds == [device[1], device[2]].sorted())
            #expect(auto.failures.isEmpty && auto.offlineDeviceIds.isEmpty)
            // Over the connections: one push each, with the push id and collapse id; APNs got only
            // the two devices not reached online, with the same apns-id a connection's would have.
            #expect(pushes(acknowledging, .auto) == 1 && pushes(silent, .auto) == 1)
            #expect(acknowledging.pushes.first { $0.pushID == batches[.auto]?.pushID }?.collapseID == "sale-auto")
            #expect(sentToAPNs("auto") == [hex(deviceToken(2)), hex(deviceToken(3))])

            // apns: every device through APNs, nothing over the connections.
            let apns = try outcome(.apns)
            #expect(apns.acceptedDeviceIds == device.sorted() && apns.deliveredOnlineDeviceIds.isEmpty)
            #expect(pushes(acknowledging, .apns) == 0 && pushes(silent, .apns) == 0)
            #expect(sentToAPNs("apns") == Set((1...3).map { hex(deviceToken($0)) }))

            // online: the acknowledging device only; the silent one and the one away skipped offline,
            // nothing through APNs.
            let online = try outcome(.online)
            #expect(online.deliveredOnlineDeviceIds == [device[0]])
            #expect(online.offlineDeviceIds == [device[1], device[2]].sorted())
            #expect(online.acceptedDeviceIds.isEmpty && online.failures.isEmpty)
            #expect(pushes(acknowledging, .online) == 1 && pushes(silent, .online) == 1)
            #expect(sentToAPNs("online").isEmpty)

            // The recall: a revoke naming the recalled push and its collapse id to both connected
            // devices (written is reached: a revoke is not acknowledged), APNs's recall to the other.
            let recalled = try #require(outcomes[recall.batchID])
            #expect(recalled.deliveredOnlineDeviceIds == [device[0], device[1]].sorted())
            #expect(recalled.acceptedDeviceIds == [device[2]] && recalled.failures.isEmpty)
            for client in [acknowledging, silent] {
                #expect(client.revokes.map(\.pushID) == [batches[.auto]!.pushID])
                #expect(client.revokes.first?.collapseID == "sale-auto")
            }
            #expect(sentToAPNs("recalled") == [hex(deviceToken(3))])
            // Three of the four batches had connected targets: they went to the gateway one at a time.
            #expect(worker.mostBatchesAtGateways == 1)
            await acknowledging.close()
            await silent.close()
            await gatewayGroup.triggerGracefulShutdown()
            _ = try? await gatewayTask.value
        }
    }

    @Test("a gateway whose port is taken stops with the reason, its delivery port closed, instead of hanging")
    func portTaken() async throws {
        try await withWorkerEnvironment(deliverable: 1) { environment in
            var (settings, _) = try await Self.gatewaySettings(environment)
            let taken = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .bind(host: "127.0.0.1", port: 0).get()
            settings.port = taken.localAddress?.port ?? 0
            let gateway = try GatewayService(
                settings: settings, database: environment.database, cipher: environment.cipher,
                deliveryTokens: [DeliveryToken.derive(masterKey: environment.masterKey)], logger: environment.logger)
            let group = ServiceGroup(configuration: .init(services: [gateway], logger: environment.logger))
            // The server and the delivery port share event loops: the loops stop only after both
            // returned (a channel closed on a stopped loop would wait for ever). A minute stands
            // for "for ever" here; the group returns within a second.
            final class Outcome: Sendable { let reason = Mutex<String?>(nil) }
            let outcome = Outcome()
            let run = Task {
                do {
                    try await group.run()
                    outcome.reason.withLock { $0 = "returned without an error" }
                } catch {
                    outcome.reason.withLock { $0 = "\(error)" }
                }
            }
            let stopped = try await eventually(timeout: .seconds(60)) { outcome.reason.withLock { $0 != nil } }
            if !stopped { run.cancel() }
            let reason = outcome.reason.withLock { $0 }
            #expect(reason?.contains("cannot listen on 127.0.0.1:\(settings.port)") == true, "\(reason ?? "hung")")
            await #expect(throws: (any Error).self) {
                try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                    .connect(host: "127.0.0.1", port: settings.deliveryPort).get().close()
            }
            try await taken.close()
        }
    }

    /// A gateway's settings for a test: loopback ports of its own, a self-signed certificate, a
    /// one-second ack timeout and a fast sweep.
    static func gatewaySettings(_ environment: WorkerEnvironment) async throws
        -> (GatewaySettings, SimulatorIdentity)
    {
        let (identity, keyPEM) = try SimulatorIdentity.selfSigned()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gateway-\(environment.suffix)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let certificateFile = directory.appendingPathComponent("tls.crt").path
        let keyFile = directory.appendingPathComponent("tls.key").path
        try identity.certificatePEM.write(toFile: certificateFile, atomically: true, encoding: .utf8)
        try keyPEM.write(toFile: keyFile, atomically: true, encoding: .utf8)
        var settings = environment.configuration.gateway
        settings.host = "127.0.0.1"
        settings.port = try await freePort()
        settings.tlsCertificateFile = certificateFile
        settings.tlsKeyFile = keyFile
        settings.deliveryHost = "127.0.0.1"
        settings.deliveryPort = try await freePort()
        settings.deliveryAddress = "127.0.0.1:\(settings.deliveryPort)"
        settings.metricsPort = 0
        settings.ackTimeout = .seconds(1)
        settings.tick = .milliseconds(50)
        settings.presenceFlush = .milliseconds(50)
        settings.name = "gateway-\(environment.suffix)"
        return (settings, identity)
    }

    /// A port nothing listens on now.
    static func freePort() async throws -> Int {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 0).get()
        let port = channel.localAddress?.port ?? 0
        try await channel.close()
        return port
    }
}
