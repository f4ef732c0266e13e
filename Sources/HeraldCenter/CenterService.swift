import Foundation
import HeraldCore
import HeraldKafka
import HeraldMessaging
import HeraldMetrics
import HeraldStore
import Logging
import PostgresNIO
import ServiceLifecycle

/// herald-center as one `Service`: the Kafka producer and consumers, the Msg Center, outcome
/// accounting, and, as `settings` turn them on, the outbox relay, retention, the webhook
/// dispatcher, the device-count folder and the operations server (`/metrics`, `/healthz`,
/// `/readyz`). herald-center's `main.swift` runs it; tests run the same composition in-process.
///
/// - Important: call `run()` in a `ServiceGroup` (it runs its parts in one of its own and stops
///   them, last started first, on graceful shutdown).
public struct CenterService: Service {
    /// The fan-outs, schedules and sweeps.
    public let center: MsgCenter
    /// What `/metrics` shows.
    public let metrics: CenterMetrics
    /// The parts, in the order they start.
    public let services: [any Service]
    /// The producer's security, for the start line.
    public let kafkaSecurity: String
    let logger: Logger

    /// - Parameters:
    ///   - settings: the center's settings (`configuration.center`, or a test's).
    ///   - configuration: the Kafka, PostgreSQL and security settings the parts share.
    ///   - database: the pool every part but the audience streams uses (migrated already).
    ///   - clientID: the Kafka client id prefix (`center`; tests name theirs).
    ///   - clock: the wall clock fan-outs plan waves and apply quiet hours by.
    /// - Throws: when a Kafka client cannot be made, or the master key is malformed.
    public init(
        settings: CenterSettings, configuration: HeraldConfiguration, database: PostgresClient, logger: Logger,
        clientID: String = "center", clock: @escaping @Sendable () -> Date = Date.init
    ) throws {
        let kafka = configuration.kafka
        let producer = try KafkaProducer(configuration: kafka.producerConfiguration(clientID: clientID), logger: logger)
        let pushEvents = try KafkaConsumer(
            configuration: kafka.consumerConfiguration(
                groupID: settings.groupID, topics: [settings.pushesTopic], clientID: "\(clientID)-pushes"),
            logger: logger)
        let outcomes = try KafkaConsumer(
            configuration: kafka.consumerConfiguration(
                groupID: settings.groupID, topics: [settings.outcomesTopic], clientID: "\(clientID)-outcomes"),
            logger: logger)
        let metrics = CenterMetrics()
        let center = MsgCenter(
            settings: settings, database: database, postgres: configuration.postgres, producer: producer,
            pushEvents: pushEvents, metrics: metrics, logger: logger, clock: clock)
        let accountant = OutcomeAccountant(
            consumer: outcomes, ledger: OutcomeLedger(client: database, logger: logger),
            deadLetters: producer, metrics: metrics, logger: logger)
        var services: [any Service] = [producer, pushEvents, outcomes, center, accountant]
        if settings.outboxInterval > .zero {
            services.append(
                OutboxRelay(
                    outbox: OutboxRepository(client: database, logger: logger), producer: producer,
                    interval: settings.outboxInterval, retention: settings.outboxRetention, metrics: metrics,
                    logger: logger))
        }
        services.append(
            RetentionSweeper(
                retention: RetentionRepository(client: database, logger: logger),
                audit: AuditRepository(client: database, logger: logger),
                pushRetention: .seconds(settings.pushRetentionDays * 86_400),
                auditRetention: .seconds(settings.auditRetentionDays * 86_400), interval: settings.retentionInterval,
                metrics: metrics, logger: logger))
        if settings.webhookMaxInFlight > 0 {
            services.append(
                WebhookDispatcher(
                    settings: WebhookDispatcher.Settings(settings), center: settings.name,
                    webhooks: WebhookRepository(client: database, logger: logger),
                    cipher: try configuration.security.cipher(), metrics: metrics, logger: logger))
        }
        services.append(
            DeviceCountFolder(
                counts: DeviceCountRepository(client: database, logger: logger), interval: settings.deviceCountInterval,
                metrics: metrics, logger: logger))
        if settings.metricsPort > 0 {
            services.append(
                OperationsServer(
                    service: "herald-center", version: HeraldVersion.current, host: settings.metricsHost,
                    port: settings.metricsPort,
                    liveness: HealthProbe([
                        .cooperativePool, producer.livenessCheck("kafka_producer"),
                        pushEvents.livenessCheck("kafka_consumer_pushes"),
                        outcomes.livenessCheck("kafka_consumer_outcomes"),
                    ]),
                    readiness: HealthProbe([
                        HeraldDatabase.readinessCheck(database, logger: logger),
                        kafka.readinessCheck("kafka_producer", producer: producer),
                        kafka.readinessCheck("kafka_consumer_pushes", consumer: pushEvents),
                        kafka.readinessCheck("kafka_consumer_outcomes", consumer: outcomes),
                    ])
                ) {
                    metrics.prometheusText(
                        extra: KafkaClientHealth.prometheusText([
                            ("producer", producer.health), ("consumer_pushes", pushEvents.health),
                            ("consumer_outcomes", outcomes.health),
                        ]))
                })
        }
        self.center = center
        self.metrics = metrics
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

extension WebhookDispatcher.Settings {
    /// The dispatcher's settings as the center's configuration gives them (docs/configuration.md);
    /// what it does not name keeps the dispatcher's own default.
    public init(_ center: CenterSettings) {
        self.init()
        maxInFlight = center.webhookMaxInFlight
        maxInFlightPerApp = center.webhookMaxInFlightPerApp
        requestTimeout = center.webhookTimeout
        firstRetryDelay = center.webhookFirstRetry
        retryWindow = center.webhookRetryWindow
        allowPrivateNetworks = center.webhookAllowPrivateNetworks
    }
}
