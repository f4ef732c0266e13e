// herald-sender: reads its configuration and runs the sender worker in a ServiceGroup
// (PostgreSQL client, Kafka producer and consumer, the APNs clients, the worker, /metrics).
// Everything it does is in the HeraldSender library; docs/configuration.md lists its settings.
import Foundation
import HeraldAPNs
import HeraldCore
import HeraldKafka
import HeraldMessaging
import HeraldMetrics
import HeraldRecords
import HeraldSender
import HeraldStore
import Logging
import ServiceLifecycle

func fail(_ message: String) -> Never { ServiceProcess.fail("herald-sender", message) }

let configuration = await ServiceProcess.start(
    "herald-sender",
    about:
        "pulls job batches from Kafka (herald.jobs, and herald.jobs.transactional first) and sends them to APNs over HTTP/2. Serves /healthz, /readyz and /metrics on HERALD_SENDER_METRICS_PORT (9465)."
)
let logger = Logger(label: "herald.sender")
let settings = configuration.sender

let cipher: CredentialCipher
do {
    guard let configured = try configuration.security.cipher() else {
        fail("HERALD_MASTER_KEY is not set: the sender needs it to open the apps' APNs keys (32 bytes, base64)")
    }
    cipher = configured
} catch {
    fail("\(error)")
}
let endpoints: SenderEndpoints
do {
    try settings.checkTrustSettings()
    endpoints = try SenderEndpoints(settings: settings)
} catch {
    fail("\(error)")
}
let clientConfiguration: APNsClientConfiguration = {
    var clientConfiguration = APNsClientConfiguration()
    clientConfiguration.connections = settings.connections
    clientConfiguration.maxInFlight = settings.maxInFlight
    clientConfiguration.requestTimeout = settings.requestTimeout
    return clientConfiguration
}()

do {
    try await HeraldDatabase.withClient(settings: configuration.postgres, logger: logger) { database in
        try await MigrationRunner(client: database, logger: logger).migrate()
        // A wrong key stops here, with one line, rather than leaving every batch waiting.
        try await CredentialRepository(client: database, logger: logger).checkSealingKeys(cipher)
        let credentials = CredentialStore(
            repository: CredentialRepository(client: database, logger: logger), cipher: cipher, endpoints: endpoints,
            clientConfiguration: clientConfiguration, idleTimeout: settings.apnsClientIdle,
            maximumClients: settings.maximumAPNsClients, logger: logger)
        let consumer = try KafkaConsumer(
            configuration: configuration.kafka.consumerConfiguration(
                groupID: settings.groupID, topics: [settings.jobsTopic], clientID: "sender"),
            logger: logger)
        let transactionalConsumer = try KafkaConsumer(
            configuration: configuration.kafka.consumerConfiguration(
                groupID: settings.transactionalGroupID, topics: [settings.transactionalJobsTopic],
                clientID: "sender-transactional"),
            logger: logger)
        let producer = try KafkaProducer(
            configuration: configuration.kafka.producerConfiguration(clientID: "sender"), logger: logger)
        let worker = SenderWorker(
            consumer: consumer, transactionalConsumer: transactionalConsumer, producer: producer,
            credentials: credentials,
            gate: StoredBatchGate(
                pushes: PushRepository(client: database, logger: logger),
                takeoverAfter: configuration.sender.batchTakeover, logger: logger),
            sender: JobBatchSender(
                retryPolicy: RetryPolicy(maxAttempts: settings.maxAttempts, backoff: settings.retryBackoff)),
            maxBatchesInFlight: settings.maxBatchesInFlight,
            maxTransactionalBatchesInFlight: settings.maxTransactionalBatchesInFlight,
            outcomesTopic: settings.outcomesTopic, logger: logger)
        var services: [any Service] = [producer, consumer, transactionalConsumer, credentials, worker]
        if settings.metricsPort > 0 {
            services.append(
                OperationsServer(
                    service: "herald-sender", version: HeraldVersion.current, host: settings.metricsHost,
                    port: settings.metricsPort,
                    liveness: HealthProbe([
                        .cooperativePool, producer.livenessCheck("kafka_producer"),
                        consumer.livenessCheck("kafka_consumer_jobs"),
                        transactionalConsumer.livenessCheck("kafka_consumer_transactional_jobs"),
                    ]),
                    readiness: HealthProbe([
                        HeraldDatabase.readinessCheck(database, logger: logger),
                        configuration.kafka.readinessCheck("kafka_producer", producer: producer),
                        configuration.kafka.readinessCheck("kafka_consumer_jobs", consumer: consumer),
                        configuration.kafka.readinessCheck(
                            "kafka_consumer_transactional_jobs", consumer: transactionalConsumer),
                    ])
                ) {
                    worker.metrics.prometheusText(
                        extra: credentials.prometheusText() + worker.lagPrometheusText()
                            + KafkaClientHealth.prometheusText([
                                ("producer", producer.health), ("consumer_jobs", consumer.health),
                                ("consumer_transactional_jobs", transactionalConsumer.health),
                            ]))
                })
        }
        logger.info(
            "herald-sender starting",
            metadata: [
                "group": "\(settings.groupID)", "transactional-group": "\(settings.transactionalGroupID)",
                "kafka": "\(configuration.kafka.brokers)",
                "kafka_security": "\(producer.securitySummary)",
                "metrics":
                    "\(settings.metricsPort > 0 ? "http://\(settings.metricsHost):\(settings.metricsPort) (/metrics, /healthz, /readyz)" : "off")",
            ])
        let group = ServiceGroup(
            configuration: .init(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
        logger.info("herald-sender stopped")
    }
} catch {
    fail("\(error)")
}
