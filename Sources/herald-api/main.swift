// herald-api: reads its configuration and serves the Open API (Schemas/openapi.yaml) in a
// ServiceGroup with its PostgreSQL client. Everything it does is in the HeraldAPI library;
// docs/configuration.md lists its settings.
import HeraldAPI
import HeraldCore
import HeraldStore
import Logging
import ServiceLifecycle

// Swift concurrency's jobs run on Swift's own pool. NIO's event loops as the global executor
// (until 2026-11-26) left one of the two loops doing twice the other's work under load, and
// make bench-api accepted fewer pushes so (docs/benchmarks.md).
let configuration = await ServiceProcess.start(
    "herald-api",
    about:
        "the Open API: apps, devices, pushes, status and statistics. Serves the API on HERALD_API_PORT (8080) and /healthz, /readyz and /metrics on HERALD_API_METRICS_PORT (9467)."
)
let logger = Logger(label: "herald.api")
let settings = configuration.api
do {
    try configuration.security.checkAdminToken()
} catch {
    ServiceProcess.fail("herald-api", "\(error)")
}

do {
    // The pool's statements end within the statement timeout (migrations lift it for their own
    // connection); the import pool APIServer opens has none (a COPY lasts as long as its upload).
    let postgres = APIServer.poolSettings(configuration.postgres, api: settings)
    try await HeraldDatabase.withClient(settings: postgres, logger: logger) { database in
        try await MigrationRunner(client: database, logger: logger).migrate()
        let legacy = try await AppRepository(client: database, logger: logger).legacyModeApps()
        if legacy.count > 0 {
            // Loud on purpose: these apps' public client keys can change devices by registration id
            // or bind aliases unsigned (docs/security.md, "Apps created before these rules").
            logger.warning(
                "apps in legacy client mode: their client keys may change devices by registration id or bind aliases unsigned; switch each with herald app update --app ID --identity-verification on --legacy-client-access off",
                metadata: [
                    "apps": "\(legacy.count)",
                    "bundle-ids":
                        "\(legacy.bundleIDs.joined(separator: ","))\(legacy.count > legacy.bundleIDs.count ? ",…" : "")",
                ])
        }
        if configuration.security.adminToken?.isEmpty ?? true {
            logger.warning(
                "no admin token configured (HERALD_ADMIN_TOKEN): apps cannot be managed through this process")
        }
        if let cipher = try configuration.security.cipher() {
            // A wrong key stops here, with one line, not at the first batch; then every credential
            // sealed with another configured key is sealed again with HERALD_MASTER_KEY.
            let credentials = CredentialRepository(client: database, logger: logger)
            try await credentials.checkSealingKeys(cipher)
            let resealed = try await credentials.resealWithSealingKey(cipher)
            if resealed > 0 {
                logger.notice(
                    "APNs credentials sealed again with HERALD_MASTER_KEY",
                    metadata: ["credentials": "\(resealed)", "sealing-key": "\(cipher.sealingKeyID)"])
            }
        } else {
            logger.warning(
                "no master key configured (HERALD_MASTER_KEY): APNs credentials cannot be stored through this process")
        }
        let server = try APIServer(
            settings: settings, security: configuration.security, database: database, postgres: postgres,
            logger: logger
        ) { port in
            logger.info(
                "herald-api listening",
                metadata: [
                    "address": "http://\(settings.host):\(port)",
                    "operations":
                        "\(settings.metricsPort > 0 ? "http://\(settings.metricsHost):\(settings.metricsPort) (/metrics, /healthz, /readyz)" : "off")",
                ])
        }
        let group = ServiceGroup(
            configuration: .init(services: [server], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
        logger.info("herald-api stopped")
    }
} catch {
    ServiceProcess.fail("herald-api", "\(error)")
}
