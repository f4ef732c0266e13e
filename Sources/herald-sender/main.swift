// herald-sender: reads its configuration and runs the sender worker (HeraldSender's
// SenderService: PostgreSQL client, Kafka producer and consumers, the APNs clients, the worker,
// /metrics). docs/configuration.md lists its settings.
import HeraldCore
import HeraldSender
import HeraldStore
import Logging
import ServiceLifecycle

let configuration = await ServiceProcess.start(
    "herald-sender",
    about:
        "pulls job batches from Kafka (herald.jobs, and herald.jobs.transactional first) and sends them to APNs over HTTP/2. Serves /healthz, /readyz and /metrics on HERALD_SENDER_METRICS_PORT (9465)."
)
let logger = Logger(label: "herald.sender")
let settings = configuration.sender

do {
    guard let cipher = try configuration.security.cipher() else {
        ServiceProcess.fail(
            "herald-sender",
            "HERALD_MASTER_KEY is not set: the sender needs it to open the apps' APNs keys (32 bytes, base64)")
    }
    try settings.checkTrustSettings()
    let endpoints = try SenderEndpoints(settings: settings)
    try await HeraldDatabase.withClient(settings: configuration.postgres, logger: logger) { database in
        try await MigrationRunner(client: database, logger: logger).migrate()
        // A wrong key stops here, with one line, rather than leaving every batch waiting.
        try await CredentialRepository(client: database, logger: logger).checkSealingKeys(cipher)
        let sender = try SenderService(
            settings: settings, configuration: configuration, database: database, cipher: cipher,
            endpoints: endpoints, logger: logger)
        logger.info(
            "herald-sender starting",
            metadata: [
                "group": "\(settings.groupID)", "transactional-group": "\(settings.transactionalGroupID)",
                "kafka": "\(configuration.kafka.brokers)", "kafka_security": "\(sender.kafkaSecurity)",
                "metrics":
                    "\(settings.metricsPort > 0 ? "http://\(settings.metricsHost):\(settings.metricsPort) (/metrics, /healthz, /readyz)" : "off")",
            ])
        let group = ServiceGroup(
            configuration: .init(services: [sender], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
        logger.info("herald-sender stopped")
    }
} catch {
    ServiceProcess.fail("herald-sender", "\(error)")
}
