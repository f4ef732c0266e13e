import HeraldHTTP2
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import ServiceLifecycle
import Synchronization

/// What every connection of one simulator shares.
final class APNsSimulatorState: Sendable {
    let configuration: APNsSimulatorConfiguration
    let keys: ProviderKeyRegistry
    let devices: DeviceRegistry
    let ledger: APNsLedger
    private let currentFaults: Mutex<APNsFaults>
    /// Bumped whenever the faults change, so connections re-read them only then (one atomic
    /// load per request instead of a lock).
    let faultsVersion = Atomic<Int>(0)

    init(configuration: APNsSimulatorConfiguration) throws {
        try configuration.faults.validate()
        self.configuration = configuration
        self.keys = try ProviderKeyRegistry(configuration.keys)
        self.devices = DeviceRegistry(acceptAnyToken: configuration.acceptAnyToken, devices: configuration.devices)
        self.ledger = try APNsLedger(mode: configuration.recording, recordFile: configuration.recordFile)
        self.currentFaults = Mutex(configuration.faults)
    }

    var faults: APNsFaults {
        get { currentFaults.withLock { $0 } }
        set {
            currentFaults.withLock { $0 = newValue }
            faultsVersion.add(1, ordering: .releasing)
        }
    }
}

/// apns-sim: Apple's provider API over TLS and HTTP/2, with Apple's validation, provider-token
/// checks, stream limits, fault injection and a record of what was delivered.
///
/// In-process use (tests): `let simulator = try await APNsSimulator.start(configuration)`, then
/// ``shutdown()``. As a service: ``run()`` starts it if needed and serves until graceful shutdown.
public final class APNsSimulator: Service, Sendable {
    let state: APNsSimulatorState
    private let server: HTTP2Server
    private let admin: APNsAdminServer?
    private let group: MultiThreadedEventLoopGroup
    private let logger: Logger
    /// The identity the provider API presents (its `certificatePEM` is what clients trust).
    public let identity: SimulatorIdentity

    private init(
        state: APNsSimulatorState, server: HTTP2Server, admin: APNsAdminServer?,
        group: MultiThreadedEventLoopGroup, identity: SimulatorIdentity, logger: Logger
    ) {
        self.state = state
        self.server = server
        self.admin = admin
        self.group = group
        self.identity = identity
        self.logger = logger
    }

    /// Binds the provider API and the admin endpoint and starts serving.
    /// - Throws: ``APNsSimulatorError`` saying what to fix (a port in use, a bad key or
    ///   certificate, an out-of-range fault).
    public static func start(_ configuration: APNsSimulatorConfiguration, logger: Logger = Logger(label: "apns-sim"))
        async throws -> APNsSimulator
    {
        let state = try APNsSimulatorState(configuration: configuration)
        let identity = try configuration.identity ?? SimulatorIdentity.selfSigned().identity
        var tls = HTTP2TLS.serverConfiguration(
            certificateChain: identity.certificateChain, privateKey: identity.privateKey)
        if let authorities = configuration.clientCertificateAuthorities {
            tls.certificateVerification = .optionalVerification
            tls.trustRoots = .certificates(authorities)
            tls.sendCANameList = true
        }
        let tlsContext = try NIOSSLContext(configuration: tls)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, configuration.threads))
        let settings = HTTP2ServerSettings(
            maxConcurrentStreams: configuration.streamsBeforeAuthentication,
            // Counting only, the simulator needs payload sizes, not payloads: keep no bodies.
            maxRequestBodyBytes: configuration.recording == .full ? 8192 : 0)
        let server: HTTP2Server
        do {
            server = try await HTTP2Server.start(
                host: configuration.host, port: configuration.port, tls: tlsContext, settings: settings, group: group
            ) { connection in
                APNsSimulatorConnection(connection: connection, state: state)
            }
        } catch {
            try? await group.shutdownGracefully()
            throw APNsSimulatorError(
                "cannot listen on \(configuration.host):\(configuration.port) (\(error)); pick another --port or stop what uses it"
            )
        }
        var admin: APNsAdminServer?
        if let adminPort = configuration.adminPort {
            do {
                admin = try await APNsAdminServer.start(
                    host: configuration.adminHost, port: adminPort, state: state, group: group)
            } catch {
                await server.close()
                try? await group.shutdownGracefully()
                throw APNsSimulatorError(
                    "cannot listen on \(configuration.adminHost):\(adminPort) for the admin endpoint (\(error)); pick another --admin-port"
                )
            }
        }
        return APNsSimulator(
            state: state, server: server, admin: admin, group: group, identity: identity, logger: logger)
    }

    /// The provider API's port.
    public var port: Int { server.port }
    /// The admin endpoint's port, if it is on.
    public var adminPort: Int? { admin?.port }

    /// Counters and recorded notifications.
    public var ledger: APNsLedger { state.ledger }
    /// The known devices (add more at run time).
    public var devices: DeviceRegistry { state.devices }
    /// The trusted token-signing keys (add more at run time).
    public var keys: ProviderKeyRegistry { state.keys }
    /// The faults in force; setting them applies to the next request on every connection.
    public var faults: APNsFaults {
        get { state.faults }
        set { state.faults = newValue }
    }

    /// Serves until graceful shutdown (SIGTERM/SIGINT through a `ServiceGroup`), then stops.
    public func run() async throws {
        logger.info(
            "apns-sim serving", metadata: ["port": "\(port)", "admin-port": "\(adminPort.map(String.init) ?? "off")"])
        try? await gracefulShutdown()
        await shutdown()
    }

    /// Stops listening, closes connections and flushes the record file.
    public func shutdown() async {
        await server.close()
        await admin?.close()
        state.ledger.flush()
        try? await group.shutdownGracefully()
    }
}
