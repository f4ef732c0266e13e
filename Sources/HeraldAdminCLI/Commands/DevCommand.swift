import ArgumentParser
import Foundation
import HeraldCLI
import HeraldCore
import HeraldDomain
import HeraldKafka
import HeraldMessaging
import HeraldRecords
import HeraldStore
import HeraldTiming
import Logging
import PostgresNIO

/// `herald dev`: the local development stack.
struct DevCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dev",
        abstract:
            "The whole stack on one machine: up, down, status; simulated devices and phones; checks against apns-sim.",
        subcommands: [
            DevUpCommand.self, DevDownCommand.self, DevStatusCommand.self, DevEnvCommand.self,
            DevStartCommand.self, DevStopCommand.self, DevDevicesCommand.self, DevVerifyCommand.self,
            DevRoundTripCommand.self, DevPhonesCommand.self,
        ]
    )
}

/// Sends data through PostgreSQL and Kafka and back, and reports what happened.
struct DevRoundTripCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "roundtrip",
        abstract:
            "Round trip through PostgreSQL and Kafka: store an app, devices and a push with its outbox record, relay the outbox to Kafka, produce job batches and consume them all back."
    )

    @Option(help: "Job batch records to send through Kafka.") var records: Int = 10_000
    @Option(help: "Targets per job batch record.") var targets: Int = 10
    @Option(help: "The topic used for the round trip.") var topic: String = "herald.roundtrip"

    func run() async throws {
        let (configuration, logger) = try await CommandSupport.bootstrap(label: "herald.dev.roundtrip")
        let runID = UUID()
        print("Herald round trip \(runID.uuidString.prefix(8))")
        print(
            "  PostgreSQL \(configuration.postgres.host):\(configuration.postgres.port)/\(configuration.postgres.database)"
        )
        print("  Kafka      \(configuration.kafka.brokers)")

        // PostgreSQL: migrations, an app, a device registered twice, a push with its outbox record.
        let store = try await HeraldDatabase.withClient(settings: configuration.postgres, logger: logger) { client in
            try await Self.postgresRoundTrip(
                client: client, kafka: configuration.kafka, logger: logger, runID: runID, topic: topic)
        }
        print(
            "  ✔ PostgreSQL: schema versions \(store.schemaVersions), app \(store.appID.uuidString.prefix(8)), "
                + "device id \(store.deviceID) kept on re-registration, push stored with \(store.outboxRecords) outbox record(s)"
        )

        // Kafka: the relayed outbox record plus job batches, produced and consumed back.
        let producer = try KafkaProducer(
            configuration: configuration.kafka.producerConfiguration(clientID: "roundtrip"),
            logger: logger)
        let consumer = try KafkaConsumer(
            configuration: configuration.kafka.consumerConfiguration(
                groupID: "roundtrip-\(runID)", topics: [topic],
                clientID: "roundtrip"),
            logger: logger)
        let pushID = Array(runID.recordBytes)
        let batches = (0..<records).map { sequence in
            Self.jobBatch(pushID: pushID, sequence: UInt32(sequence), targets: targets)
        }
        let encoded = try batches.map { try $0.encodedRecord() }
        let recordBytes = encoded.reduce(0) { $0 + $1.count }

        let produceStart = ContinuousClock.now
        try await producer.send(
            encoded.enumerated().map { index, value in
                KafkaProducerMessage(topic: topic, key: Array(batches[index].batchID), value: value)
            })
        let produceTime = ContinuousClock.now - produceStart
        await producer.shutdown()
        print(
            "  ✔ Kafka: produced \(records) job batches (\(targets) targets each, \(recordBytes / max(records, 1)) bytes each), "
                + "acknowledged in \(Self.format(produceTime))")

        // Consume until every batch of this run is back, exactly once each.
        let consumeStart = ContinuousClock.now
        var seen = Set<UInt32>()
        var duplicates = 0
        var outboxSeen = false
        let deadline = ContinuousClock.now + .seconds(60)
        for try await message in consumer.messages {
            if let batch = try? Herald_V1_JobBatch.decodeRecord(message.value), batch.pushID == Data(pushID) {
                if !seen.insert(batch.sequence).inserted { duplicates += 1 }
            } else if let event = try? Herald_V1_PushEvent.decodeRecord(message.value),
                event.pushID == store.pushID.recordBytes
            {
                outboxSeen = true
            }
            try consumer.storeOffset(for: message)
            if (seen.count == records && outboxSeen) || ContinuousClock.now > deadline { break }
        }
        let consumeTime = ContinuousClock.now - consumeStart
        try await consumer.close()

        let ok = seen.count == records && duplicates == 0 && outboxSeen
        print(
            "  \(ok ? "✔" : "✘") Kafka: consumed \(seen.count)/\(records) job batches back (\(duplicates) duplicates) in "
                + "\(Self.format(consumeTime)); outbox record relayed: \(outboxSeen ? "yes" : "NO")")
        CommandSupport.printJSON([
            "ok": ok, "records": records, "consumed": seen.count, "duplicates": duplicates,
            "outbox_relayed": outboxSeen, "produce_seconds": produceTime.fractionalSeconds,
            "consume_seconds": consumeTime.fractionalSeconds, "record_bytes": recordBytes / max(records, 1),
        ])
        if !ok { throw ExitCode.failure }
    }

    struct StoreResult: Sendable {
        var schemaVersions: [Int]
        var appID: UUID
        var deviceID: Int64
        var pushID: UUID
        var outboxRecords: Int
    }

    static func postgresRoundTrip(
        client: PostgresClient, kafka: KafkaSettings, logger: Logger, runID: UUID, topic: String
    ) async throws -> StoreResult {
        let migrations = try MigrationRunner(client: client, logger: logger)
        try await migrations.migrate()
        let versions = try await migrations.appliedVersions()

        let apps = AppRepository(client: client, logger: logger)
        let devices = DeviceRepository(client: client, logger: logger)
        let pushes = PushRepository(client: client, logger: logger)
        let outbox = OutboxRepository(client: client, logger: logger)

        let app = try await apps.create(
            name: "roundtrip \(runID.uuidString.prefix(8))", bundleID: "com.example.roundtrip")
        let token = (0..<32).map { _ in UInt8.random(in: 0...255) }
        let registration = DeviceRegistration(
            appID: app.id, token: token, environment: .sandbox,
            topic: app.bundleID, alias: "roundtrip", tags: ["demo"])
        let first = try await devices.register(registration)
        let second = try await devices.register(registration)
        guard first.id == second.id, first.isNew, !second.isNew else {
            throw ValidationError("re-registering a token created a second device (\(first.id) vs \(second.id))")
        }

        let pushID = UUID()
        let push = NewPush(
            id: pushID, appID: app.id, audienceJSON: #"{"all":true}"#,
            notificationJSON: #"{"alert":"Hello from the round trip"}"#,
            payload: Array(#"{"aps":{"alert":"Hello from the round trip"}}"#.utf8))
        _ = try await pushes.create(
            push, announcement: try .pushEvent(.created, pushID: pushID, appID: app.id, topic: topic))

        // The relay's job: publish the outbox to Kafka, then mark it published.
        let producer = try KafkaProducer(
            configuration: kafka.producerConfiguration(clientID: "roundtrip-relay"), logger: logger)
        var relayed = 0
        while true {
            let published = try await outbox.publishBatch(limit: 100) { records in
                try await producer.send(
                    records.map { KafkaProducerMessage(topic: $0.topic, key: $0.key, value: $0.value) })
            }
            relayed += published
            if published == 0 { break }
        }
        await producer.shutdown()
        try await apps.delete(id: app.id)
        return StoreResult(
            schemaVersions: versions, appID: app.id, deviceID: first.id, pushID: pushID, outboxRecords: relayed)
    }

    static func jobBatch(pushID: [UInt8], sequence: UInt32, targets: Int) -> Herald_V1_JobBatch {
        Herald_V1_JobBatch(
            pushID: Data(pushID), appID: Data(pushID), sequence: sequence, environment: .sandbox,
            apnsTopic: "com.example.roundtrip", pushType: .alert, priority: 10,
            expirationS: Int64(Date().timeIntervalSince1970) + 86_400, collapseID: UUID().uuidString,
            payload: Data(
                #"{"aps":{"alert":{"title":"Herald","body":"Your order has shipped and will arrive tomorrow."},"sound":"default"}}"#
                    .utf8),
            targets: (0..<targets).map { index in
                .init(
                    deviceID: UInt64(sequence) * UInt64(targets) + UInt64(index) + 1,
                    token: Data((0..<32).map { _ in UInt8.random(in: 0...255) }))
            },
            createdAtMs: Int64(Date().timeIntervalSince1970 * 1000))
    }

    static func format(_ duration: Duration) -> String {
        String(format: "%.2f s", duration.fractionalSeconds)
    }
}
