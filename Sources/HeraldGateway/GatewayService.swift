import Foundation
import HeraldAccess
import HeraldCore
import HeraldMetrics
import HeraldStore
import Logging
import PostgresNIO
import ServiceLifecycle

/// herald-gateway as one `Service`: the ``GatewayServer`` and, when `settings` give it a port,
/// the operations server (`/metrics`, `/healthz`, `/readyz`). herald-gateway's `main.swift` runs
/// it; tests run the same composition in-process.
///
/// - Important: call `run()` in a `ServiceGroup`; the database must be migrated.
public struct GatewayService: Service {
    public let server: GatewayServer
    let presence: PresenceWriter
    let deliveries: DeliveryServer
    let services: [any Service]
    let logger: Logger

    /// - Parameters:
    ///   - settings: the gateway's settings (`configuration.gateway`, or a test's); its TLS files
    ///     must be set.
    ///   - database: a migrated pool.
    ///   - cipher: opens the apps' identity secrets (the master key), for alias signatures.
    ///   - deliveryTokens: the bearer tokens the delivery port takes
    ///     (``DeliveryToken/derive(masterKey:)`` of the master key and of each decrypt-only key).
    /// - Throws: ``GatewayStartError`` when the TLS files are missing or unreadable.
    public init(
        settings: GatewaySettings, database: PostgresClient, cipher: CredentialCipher, deliveryTokens: [String],
        logger: Logger
    ) throws {
        let name = settings.name ?? ProcessInfo.processInfo.hostName
        let deliveryAddress = settings.deliveryAddress ?? "\(ProcessInfo.processInfo.hostName):\(settings.deliveryPort)"
        guard let certificateFile = settings.tlsCertificateFile, let keyFile = settings.tlsKeyFile else {
            throw GatewayStartError(
                "set HERALD_GATEWAY_TLS_CERTIFICATE_FILE and HERALD_GATEWAY_TLS_KEY_FILE: herald-gateway speaks only TLS"
            )
        }
        let tls = try GatewayTLS.context(certificateFile: certificateFile, keyFile: keyFile)
        let metrics = GatewayMetrics()
        let counters = metrics.access
        let authenticator = GatewayAuthenticator(
            keys: KeyAuthenticator(
                keys: APIKeyRepository(client: database, logger: logger), cacheTTL: settings.keyCacheTTL,
                counters: counters),
            devices: DeviceRepository(client: database, logger: logger),
            apps: AppRepository(client: database, logger: logger),
            identitySecrets: IdentitySecretRepository(client: database, logger: logger), cipher: cipher,
            failures: FailedAuthenticationThrottle(limit: settings.authenticationFailuresPerMinute, counters: counters),
            logger: logger)
        let server = GatewayServer(
            settings: settings, tls: tls, authenticator: authenticator, metrics: metrics, name: name, logger: logger)
        let deliveries = DeliveryServer(
            host: settings.deliveryHost, port: settings.deliveryPort, tokens: deliveryTokens,
            environment: server.environment, group: server.group)
        let presence = PresenceWriter(
            gatewayID: UUID(), name: name, deliveryAddress: deliveryAddress,
            repository: GatewayPresenceRepository(client: database, logger: logger),
            directory: server.directory, lease: settings.presenceLease, flushEvery: settings.presenceFlush,
            metrics: metrics, logger: logger)
        // A graceful stop runs in reverse: the delivery port closes first (its senders send
        // through APNs from then on; requests in flight are answered, the event loops still
        // run), then the server drains, then presence is given up, and the operations port
        // closes last.
        var services: [any Service] = [presence, server, deliveries]
        if settings.metricsPort > 0 {
            services.insert(
                OperationsServer(
                    service: "herald-gateway", version: HeraldVersion.current, host: settings.metricsHost,
                    port: settings.metricsPort,
                    readiness: HealthProbe([
                        HeraldDatabase.readinessCheck(database, logger: logger), presence.readiness,
                    ])
                ) {
                    metrics.prometheusText(
                        devicesConnected: server.directory.count, presencePending: server.directory.pendingChanges)
                }, at: 0)
        }
        self.server = server
        self.presence = presence
        self.deliveries = deliveries
        self.services = services
        self.logger = logger
    }

    /// Runs the parts; the event loops the server and the delivery port share stop after both have
    /// returned, whether the group ended gracefully or on an error (a port that could not be bound).
    public func run() async throws {
        do {
            try await ServiceGroup(configuration: .init(services: services, logger: logger)).run()
        } catch {
            await server.shutdown()
            throw error
        }
        await server.shutdown()
    }
}
