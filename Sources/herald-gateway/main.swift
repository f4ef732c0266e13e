// herald-gateway: reads its configuration and runs the long-connection gateway (HeraldGateway's
// GatewayService: the TLS and WebSocket listener, /metrics). docs/configuration.md lists its
// settings, docs/gateway.md its protocol.
import HeraldAccess
import HeraldCore
import HeraldGateway
import HeraldStore
import Logging
import ServiceLifecycle

let configuration = await ServiceProcess.start(
    "herald-gateway",
    about:
        "holds the long connections of apps in the foreground (TLS on HERALD_GATEWAY_PORT, 7443: framed, or WebSocket at /v1/connect). Serves /healthz, /readyz and /metrics on HERALD_GATEWAY_METRICS_PORT (9468)."
)
let logger = Logger(label: "herald.gateway")
let settings = configuration.gateway

do {
    guard let cipher = try configuration.security.cipher() else {
        ServiceProcess.fail(
            "herald-gateway",
            "HERALD_MASTER_KEY is not set: the gateway needs it to check alias signatures (32 bytes, base64)")
    }
    try await HeraldDatabase.withClient(settings: configuration.postgres, logger: logger) { database in
        try await MigrationRunner(client: database, logger: logger).migrate()
        let gateway = try GatewayService(
            settings: settings, database: database, cipher: cipher,
            deliveryTokens: ([configuration.security.masterKey ?? ""] + configuration.security.decryptOnlyMasterKeys)
                .map { DeliveryToken.derive(masterKey: $0) }, logger: logger)
        logger.info(
            "herald-gateway starting",
            metadata: [
                "address": "\(settings.host):\(settings.port)",
                "deliveries": "\(settings.deliveryHost):\(settings.deliveryPort)",
                "metrics":
                    "\(settings.metricsPort > 0 ? "http://\(settings.metricsHost):\(settings.metricsPort) (/metrics, /healthz, /readyz)" : "off")",
            ])
        let group = ServiceGroup(
            configuration: .init(services: [gateway], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
        logger.info("herald-gateway stopped")
    }
} catch {
    ServiceProcess.fail("herald-gateway", "\(error)")
}
