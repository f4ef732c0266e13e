// herald-center: reads its configuration and runs the Msg Center (HeraldCenter's CenterService:
// PostgreSQL client, Kafka producer and consumers, the outbox relay, fan-outs and sweeps,
// outcome accounting, /metrics). docs/configuration.md lists its settings.
import HeraldCenter
import HeraldCore
import HeraldStore
import Logging
import ServiceLifecycle

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
        let center = try CenterService(
            settings: settings, configuration: configuration, database: database, logger: logger)
        logger.info(
            "herald-center starting",
            metadata: [
                "name": "\(settings.name)", "group": "\(settings.groupID)", "kafka": "\(configuration.kafka.brokers)",
                "kafka_security": "\(center.kafkaSecurity)",
                "metrics":
                    "\(settings.metricsPort > 0 ? "http://\(settings.metricsHost):\(settings.metricsPort) (/metrics, /healthz, /readyz)" : "off")",
            ])
        let group = ServiceGroup(
            configuration: .init(services: [center], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
        logger.info("herald-center stopped")
    }
} catch {
    ServiceProcess.fail("herald-center", "\(error)")
}
