// herald-center: reads its configuration and runs the Msg Center in a ServiceGroup (PostgreSQL
// client, Kafka producer and consumers, the outbox relay, fan-outs and sweeps, outcome
// accounting, /metrics). Everything it does is in the HeraldCenter library; docs/configuration.md
// lists its settings.
import Foundation
import HeraldCenter
import HeraldCore
import HeraldKafka
import HeraldMessaging
import HeraldMetrics
import HeraldStore
import Logging
import ServiceLifecycle

func fail(_ message: String) -> Never { ServiceProcess.fail("herald-center", message) }

let configuration = await ServiceProcess.start(
    "herald-center",
    about:
        "the Msg Center: resolves audiences from PostgreSQL into job batches on Kafka, schedules, throttles, cancels, recalls and counts outcomes. Serves /healthz, /readyz and /metrics on HERALD_CENTER_METRICS_PORT (9466)."
)
let logger = Logger(label: "herald.center")
let settings = configuration.center

do {
    try await HeraldDatabase.withClient(settings: configuration.postgres, logger: logger) { database in
        try await MigrationRunner(client: database, logger: logger).migrate()
        let kafka = configuration.kafka
        let producer = try KafkaProducer(configuration: kafka.producerConfiguration(clientID: "center"), logger: logger)
        let pushEvents = try KafkaConsumer(
            configuration: kafka.consumerConfiguration(
                groupID: settings.groupID, topics: [settings.pushesTopic], clientID: "center-pushes"),
            logger: logger)
        let outcomes = try KafkaConsumer(
            configuration: kafka.consumerConfiguration(
                groupID: settings.groupID, topics: [settings.outcomesTopic], clientID: "center-outcomes"),
            logger: logger)
        let metrics = CenterMetrics()
        let center = MsgCenter(
            settings: settings, database: database, postgres: configuration.postgres, producer: producer,
            pushEvents: pushEvents,
            metrics: metrics, logger: logger)
        let accountant = OutcomeAccountant(
            consumer: outcomes, fanouts: FanoutRepository(client: database, logger: logger),
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
            var webhookSettings = WebhookDispatcher.Settings()
            webhookSettings.maxInFlight = settings.webhookMaxInFlight
            webhookSettings.maxInFlightPerApp = settings.webhookMaxInFlightPerApp
            webhookSettings.requestTimeout = settings.webhookTimeout
            webhookSettings.firstRetryDelay = settings.webhookFirstRetry
            webhookSettings.retryWindow = settings.webhookRetryWindow
            webhookSettings.allowPrivateNetworks = settings.webhookAllowPrivateNetworks
            services.append(
                WebhookDispatcher(
                    settings: webhookSettings, center: settings.name,
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
        logger.info(
            "herald-center starting",
            metadata: [
                "name": "\(settings.name)", "group": "\(settings.groupID)", "kafka": "\(kafka.brokers)",
                "kafka_security": "\(producer.securitySummary)",
                "metrics":
                    "\(settings.metricsPort > 0 ? "http://\(settings.metricsHost):\(settings.metricsPort) (/metrics, /healthz, /readyz)" : "off")",
            ])
        let group = ServiceGroup(
            configuration: .init(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
        logger.info("herald-center stopped")
    }
} catch {
    fail("\(error)")
}
