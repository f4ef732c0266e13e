import Foundation
import HTTPTypes
import HeraldAccess
import HeraldConsole
import HeraldCore
import HeraldMetrics
import HeraldStore
import Hummingbird
import Logging
import OpenAPIHummingbird
import OpenAPIRuntime
import PostgresNIO
import ServiceLifecycle

/// herald-api: the Open API on Hummingbird, routes and bodies generated from
/// Schemas/openapi.yaml.
///
/// A `Service`: run it in a `ServiceGroup` after the `PostgresClient` it uses. It writes pushes
/// and their announcements to PostgreSQL only (the outbox); herald-center publishes them, so a
/// broker outage never fails a request.
public struct APIServer: Service {
    /// The Hummingbird application (tests drive it with HummingbirdTesting).
    let application: Application<RouterResponder<APIRequestContext>>

    /// The settings of herald-api's own pool: `postgres` with the statement timeout of
    /// `settings` (PostgreSQL stops a statement whose request was answered 503 long ago).
    public static func poolSettings(_ postgres: PostgresSettings, api settings: APISettings) -> PostgresSettings {
        var postgres = postgres
        postgres.statementTimeout = settings.statementTimeout
        return postgres
    }

    /// - Parameters:
    ///   - database: a pool made with ``poolSettings(_:api:)``.
    ///   - postgres: where imports open a pool of their own (`importConnections` connections).
    ///   - onServerRunning: called with the port once the server listens (useful with port 0).
    public init(
        settings: APISettings, security: SecuritySettings, database: PostgresClient, postgres: PostgresSettings,
        logger: Logger,
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) throws {
        try self.init(
            settings: settings, security: security, database: database, postgres: postgres, logger: logger,
            rateLimitClock: RateLimiter.now, onServerRunning: onServerRunning)
    }

    /// - Parameter rateLimitClock: the rate limiters' clock (tests move one of their own).
    init(
        settings: APISettings, security: SecuritySettings, database: PostgresClient, postgres: PostgresSettings,
        logger: Logger, rateLimitClock: @escaping RateLimiter.Clock,
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) throws {
        let cipher = try security.cipher()
        let keys = APIKeyRepository(client: database, logger: logger)
        let metrics = APIMetrics()
        let authenticator = KeyAuthenticator(keys: keys, cacheTTL: settings.keyCacheTTL, counters: metrics.access)
        let deadlines = RequestDeadlines(timeout: settings.requestTimeout)
        var importPostgres = postgres
        importPostgres.maximumConnections = settings.importConnections
        // A COPY lasts as long as its upload: the import's bounds are its own (its merge's
        // statement_timeout is set in its transaction).
        importPostgres.statementTimeout = .zero
        let importDatabase = try HeraldDatabase.makeClient(settings: importPostgres, logger: logger)
        let progressHub = PushProgressHub(
            pushes: PushRepository(client: database, logger: logger),
            limits: .init(
                perApp: settings.streamsPerApp, perProcess: settings.streams, lifetime: settings.streamLifetime),
            logger: logger)
        metrics.progressHub.withLock { $0 = progressHub }
        let deviceQuota = DeviceQuota(
            limit: settings.maximumActiveDevicesPerApp, refresh: settings.deviceQuotaRefresh,
            counts: DeviceCountRepository(client: database, logger: logger))
        metrics.deviceQuota.withLock { $0 = deviceQuota }
        let handler = APIHandler(
            database: database, apps: AppRepository(client: database, logger: logger), keys: keys,
            credentials: CredentialRepository(client: database, logger: logger),
            identitySecrets: IdentitySecretRepository(client: database, logger: logger),
            audit: AuditRepository(client: database, logger: logger),
            webhooks: WebhookRepository(client: database, logger: logger),
            segments: SegmentRepository(client: database, logger: logger),
            templates: TemplateRepository(client: database, logger: logger),
            schedules: ScheduleRepository(client: database, logger: logger),
            devices: DeviceRepository(client: database, logger: logger),
            deviceCounts: DeviceCountRepository(client: database, logger: logger), deviceQuota: deviceQuota,
            imports: DeviceImports(
                devices: DeviceRepository(client: importDatabase, logger: logger),
                slots: ImportSlots(limit: settings.importConnections)),
            pushes: PushRepository(client: database, logger: logger),
            engagement: EngagementRepository(client: database, logger: logger),
            pushWriter: PushWriter(
                client: database, logger: logger, maximumWriters: settings.pushWriters,
                maximumBatch: settings.pushBatch),
            progressHub: progressHub,
            claims: FanoutClaimRepository(client: database, logger: logger),
            audiences: AudienceRepository(client: database, logger: logger), authenticator: authenticator,
            cipher: cipher,
            settings: settings, metrics: metrics, deadlines: deadlines, logger: logger)

        let rateLimiter = RateLimiter(
            ratePerSecond: settings.rateLimitPerSecond, burst: settings.rateLimitBurst, clock: rateLimitClock)
        let clientRateLimiter = RateLimiter(
            ratePerSecond: settings.clientRateLimitPerSecond, burst: settings.clientRateLimitBurst,
            clock: rateLimitClock)
        // Per process, not shared out among the replicas: one client's connection stays on one.
        let clientSourceRateLimiter = RateLimiter(
            ratePerSecond: settings.clientSourceRateLimitPerSecond, burst: settings.clientSourceRateLimitBurst,
            clock: rateLimitClock)
        let proxies = try TrustedProxies(parsing: settings.trustedProxies)
        let admission = Admission(
            rateLimiter: rateLimiter, clientRateLimiter: clientRateLimiter,
            clientSourceRateLimiter: clientSourceRateLimiter, clientAddressesTrusted: !proxies.networks.isEmpty)
        let router = Router(context: APIRequestContext.self)
        if !proxies.networks.isEmpty { router.add(middleware: ClientAddressMiddleware(proxies: proxies)) }
        router.add(middleware: RequestIDMiddleware())
        let failedAuthentications = FailedAuthenticationThrottle(
            limit: settings.authenticationFailuresPerMinute, counters: metrics.access)
        if settings.consoleEnabled {
            // Registered before the API's authentication gate: the console authenticates by its
            // session cookie, then runs the same operations through ConsoleBridge.
            ConsoleRoutes<APIRequestContext>(
                gateway: ConsoleBridge(
                    handler: handler, adminToken: security.adminToken, authenticator: authenticator, keys: keys,
                    apps: AppRepository(client: database, logger: logger), throttle: failedAuthentications,
                    admission: admission, deadlines: deadlines, logger: logger),
                sessions: ConsoleSessionRepository(client: database, logger: logger),
                idleTimeout: settings.consoleIdleTimeout, sessionLifetime: settings.consoleSessionLifetime,
                secureCookies: settings.consoleSecureCookies, logger: logger
            ).register(on: router)
        }
        router.add(
            middleware: AuthenticationGate(
                adminToken: security.adminToken, authenticator: authenticator, throttle: failedAuthentications,
                deadlines: deadlines, logger: logger))
        router.add(middleware: RouteErrorMiddleware(maximumBodyBytes: settings.maximumBodyBytes))
        try handler.registerHandlers(
            on: router,
            configuration: .init(
                dateTranscoder: InternetDateTranscoder(), jsonEncodingOptions: [.sortedKeys, .withoutEscapingSlashes]),
            middlewares: [
                MetricsMiddleware(metrics: metrics),
                ErrorResponseMiddleware(logger: logger, deadlines: deadlines),
                AuthenticationMiddleware(admission: admission),
            ])
        var services: [any Service] = [deadlines, importDatabase, progressHub]
        if settings.replicaHeartbeat > .zero {
            services.append(
                APIReplicaHeartbeat(
                    replicas: APIReplicaRepository(client: database, logger: logger),
                    rateLimiters: [rateLimiter, clientRateLimiter],
                    interval: settings.replicaHeartbeat, name: "\(ProcessInfo.processInfo.hostName):\(getpid())",
                    logger: logger))
        }
        if settings.metricsPort > 0 {
            services.append(
                OperationsServer(
                    service: "herald-api", version: HeraldVersion.current, host: settings.metricsHost,
                    port: settings.metricsPort,
                    readiness: HealthProbe([HeraldDatabase.readinessCheck(database, logger: logger)])
                ) { metrics.prometheusText() })
        }
        application = Application(
            router: router,
            // Herald's own client-wait timeout instead of Hummingbird's idle timeout, which also
            // ran while the server worked on a request whose end it had not read yet.
            server: .http1(
                configuration: .init(
                    additionalChannelHandlers: [ClientWaitTimeoutHandler(timeout: TimeAmount(settings.idleTimeout))],
                    idleTimeout: nil)),
            configuration: .init(address: .hostname(settings.host, port: settings.port), serverName: "herald-api"),
            services: services,
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? 0) },
            logger: logger)
    }

    public func run() async throws {
        try await application.runService()
    }
}

/// What happens before an operation is found: unknown paths and methods, and bodies over the
/// limit, answered in Herald's JSON error form.
struct RouteErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    let maximumBodyBytes: Int

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        var request = request
        if !request.uri.path.hasSuffix("/devices/import") {
            // JSON bodies are read here, within the limit, and announced with their length: the
            // operations then see an empty body as no body (ErrorResponseMiddleware).
            let buffer: ByteBuffer
            do {
                buffer = try await request.collectBody(upTo: maximumBodyBytes)
            } catch {
                return Self.response(
                    APIError(
                        .contentTooLarge, code: .bodyTooLarge,
                        message: "a request body is at most \(maximumBodyBytes) bytes"))
            }
            var head = request.head
            head.headerFields[.contentLength] = String(buffer.readableBytes)
            request = Request(head: head, body: .init(buffer: buffer))
        }
        do {
            return try await next(request, context)
        } catch let error as HTTPError {
            switch error.status {
            case .notFound:
                return Self.response(
                    APIError(
                        .notFound, code: .noSuchRoute,
                        message:
                            "\(request.method.rawValue) \(request.uri.path) is not part of the Herald Open API (Schemas/openapi.yaml)"
                    ))
            case .methodNotAllowed:
                return Self.response(
                    APIError(
                        .methodNotAllowed, code: .methodNotAllowed,
                        message: "\(request.uri.path) does not take \(request.method.rawValue)"))
            default:
                return Self.response(
                    APIError(error.status, code: .invalidRequest, message: error.body ?? error.status.reasonPhrase))
            }
        }
    }

    static func response(_ error: APIError) -> Response {
        var headers = error.headers
        headers[.contentType] = "application/json"
        return Response(status: error.status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: error.body)))
    }
}
