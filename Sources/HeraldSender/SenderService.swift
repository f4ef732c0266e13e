import HeraldAPNs
import HeraldAccess
import HeraldCore
import HeraldKafka
import HeraldMessaging
import HeraldMetrics
import HeraldStore
import Logging
import PostgresNIO
import ServiceLifecycle

/// herald-sender as one `Service`: the Kafka producer and the two job consumers, the APNs clients
/// (``CredentialStore``), the ``SenderWorker`` and, when `settings` give it a port, the
/// operations server (`/metrics`, `/healthz`, `/readyz`). herald-sender's `main.swift` runs it;
/// tests run the same composition in-process.
///
/// - Important: call `run()` in a `ServiceGroup` (it runs its parts in one of its own). A
///   credential `cipher` does not open holds its app's batches: herald-sender checks the key
///   against every stored credential before it starts this (`checkSealingKeys`).
public struct SenderService: Service {
    /// The worker (its metrics, its lag).
    public let worker: SenderWorker
    /// The parts, in the order they start.
    public let services: [any Service]
    /// The producer's security, for the start line.
    public let kafkaSecurity: String
    let logger: Logger

    /// - Parameters:
    ///   - settings: the sender's settings (`configuration.sender`, or a test's).
    ///   - configuration: the Kafka settings the clients share.
    ///   - database: a migrated pool.
    ///   - cipher: opens the apps' APNs credentials (the master key).
    ///   - endpoints: where APNs is (``SenderEndpoints/init(settings:)`` for the configured ones).
    ///   - clientID: the Kafka client id prefix (`sender`; tests name theirs).
    /// - Throws: when a Kafka client cannot be made.
    public init(
        settings: SenderSettings, configuration: HeraldConfiguration, database: PostgresClient,
        cipher: CredentialCipher, endpoints: SenderEndpoints, logger: Logger, clientID: String = "sender"
    ) throws {
        var clientConfiguration = APNsClientConfiguration()
        clientConfiguration.connections = settings.connections
        clientConfiguration.maxInFlight = settings.maxInFlight
        clientConfiguration.requestTimeout = settings.requestTimeout
        let kafka = configuration.kafka
        let store = CredentialStore(
            repository: CredentialRepository(client: database, logger: logger), cipher: cipher, endpoints: endpoints,
            clientConfiguration: clientConfiguration, idleTimeout: settings.apnsClientIdle,
            maximumClients: settings.maximumAPNsClients, logger: logger)
        // A revoke waits for the batches in hand, so a sender joining or leaving mid-broadcast
        // sends nothing twice.
        var jobs = kafka.consumerConfiguration(
            groupID: settings.groupID, topics: [settings.jobsTopic], clientID: clientID)
        jobs.revokeGrace = settings.revokeGrace
        var transactionalJobs = kafka.consumerConfiguration(
            groupID: settings.transactionalGroupID, topics: [settings.transactionalJobsTopic],
            clientID: "\(clientID)-transactional")
        transactionalJobs.revokeGrace = settings.revokeGrace
        let consumer = try KafkaConsumer(configuration: jobs, logger: logger)
        let transactionalConsumer = try KafkaConsumer(configuration: transactionalJobs, logger: logger)
        let producer = try KafkaProducer(configuration: kafka.producerConfiguration(clientID: clientID), logger: logger)
        let online =
            settings.onlineDelivery
            ? OnlineRouter(
                presence: GatewayPresenceRepository(client: database, logger: logger),
                token: DeliveryToken.derive(masterKey: configuration.security.masterKey ?? ""),
                timeout: settings.onlineTimeout, cacheFor: settings.presenceCache,
                connectionsPerGateway: min(settings.maxBatchesInFlight, settings.maxOnlineBatchesInFlight)
                    + settings.maxTransactionalBatchesInFlight,
                logger: logger) : nil
        let worker = SenderWorker(
            consumer: consumer, transactionalConsumer: transactionalConsumer, producer: producer,
            credentials: store,
            gate: StoredBatchGate(
                pushes: PushRepository(client: database, logger: logger), takeoverAfter: settings.batchTakeover,
                logger: logger),
            sender: JobBatchSender(
                retryPolicy: RetryPolicy(maxAttempts: settings.maxAttempts, backoff: settings.retryBackoff)),
            online: online, maxBatchesInFlight: settings.maxBatchesInFlight,
            maxOnlineBatchesInFlight: settings.maxOnlineBatchesInFlight,
            maxTransactionalBatchesInFlight: settings.maxTransactionalBatchesInFlight,
            outcomesTopic: settings.outcomesTopic, logger: logger)
        var services: [any Service] = [producer, consumer, transactionalConsumer, store]
        if let online { services.append(online) }
        services.append(worker)
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
                        kafka.readinessCheck("kafka_producer", producer: producer),
                        kafka.readinessCheck("kafka_consumer_jobs", consumer: consumer),
                        kafka.readinessCheck("kafka_consumer_transactional_jobs", consumer: transactionalConsumer),
                    ])
                ) {
                    worker.metrics.prometheusText(
                        extra: store.prometheusText() + worker.lagPrometheusText() + (online?.prometheusText() ?? "")
                            + KafkaClientHealth.prometheusText([
                                ("producer", producer.health), ("consumer_jobs", consumer.health),
                                ("consumer_transactional_jobs", transactionalConsumer.health),
                            ]))
                })
        }
        self.worker = worker
        self.services = services
        self.kafkaSecurity = producer.securitySummary
        self.logger = logger
    }

    /// Runs the parts in a group of their own, which follows the enclosing group's graceful
    /// shutdown (swift-service-lifecycle hands it down).
    public func run() async throws {
        try await ServiceGroup(configuration: .init(services: services, logger: logger)).run()
    }
}
