import APNsSimulator
import Crypto
import Foundation
import HeraldCLI
import HeraldCore
import HeraldStore
import Logging
import PostgresNIO

/// Brings the development stack up in order (PostgreSQL, the broker, apns-sim, herald-api,
/// herald-center, the gateways, the senders), each awaited before the next, and down in reverse.
///
/// Every service can run several times: `apis` herald-api processes behind HAProxy (Debian's,
/// round robin, health-checked on `/readyz`, retrying a request whose process died) on the API
/// port, `centers` herald-centers, `senders` senders. One of a kind keeps its plain name
/// (`herald-api`); several are numbered (`herald-api-1`, `herald-api-2`).
struct DevStackLauncher {
    var directory: String
    var binDirectory: String
    var senders: Int
    var apiPort: Int
    var apis = 1
    var centers = 1
    var apnsSimRecord = "full"
    /// herald-gateway processes (0: none); more than one run behind HAProxy in TCP mode.
    var gateways = 1
    var gatewayPort = 7443
    /// Start Debian's Prometheus scraping every process (`--prometheus`), with these rule files.
    var prometheus = false
    var prometheusRules: [String] = []
    var say: (String) -> Void = {
        print($0)
        fflush(nil)
    }

    static let services = ["herald-kafka-dev", "apns-sim", "herald-api", "herald-center", "herald-sender"]

    func up() async throws -> DevStack {
        for binary in Self.services + (gateways > 0 ? ["herald-gateway"] : [])
        where !FileManager.default.isExecutableFile(atPath: "\(binDirectory)/\(binary)") {
            throw CLIError("\(binDirectory)/\(binary) not found: build it (`swift build -c release`) or pass --bin-dir")
        }
        if let existing = try? DevStack.load(from: directory) {
            guard !existing.processes.contains(where: { ProcessControl.isAlive($0.pid) }) else {
                throw CLIError(
                    "a stack is already running from \(directory): `herald dev down` first (or use another --dir)")
            }
            try? DevPostgres.stop(existing.postgres)  // left over from a stack that died
        }
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory + "/logs", withIntermediateDirectories: true)
        let directory = URL(fileURLWithPath: self.directory).standardizedFileURL.path

        // PostgreSQL.
        let postgres = try DevPostgres.create(directory: directory, port: try ProcessControl.freePort())
        say("  ✔ PostgreSQL      127.0.0.1:\(postgres.port) (throwaway cluster in \(directory)/postgres)")

        var stack = DevStack(
            directory: directory, binDirectory: binDirectory, apiURL: "", adminToken: "hadm_" + randomToken(bytes: 32),
            masterKey: Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString(),
            postgres: postgres, kafkaBrokers: "", apnsSim: .init(port: 0, adminPort: 0, certificate: ""),
            signingKey: try makeSigningKey(in: directory), metricsURLs: [:], processes: [])
        do {
            try await startServices(&stack)
        } catch {
            say("  ✘ the stack did not start; stopping what did")
            try? stack.save()
            await Self.down(stack, keepData: true, say: { _ in })
            throw error
        }
        try stack.save()
        try ClientConfiguration.save(
            ["api_url": stack.apiURL, "admin_token": stack.adminToken],
            to: URL(fileURLWithPath: directory + "/cli.json"))
        return stack
    }

    private func startServices(_ stack: inout DevStack) async throws {
        let base = baseEnvironment(stack)

        // The development broker, on a port it keeps across restarts (so clients reconnect).
        let kafkaPort = try ProcessControl.freePort()
        stack.kafkaBrokers = "127.0.0.1:\(kafkaPort)"
        try await launch(
            &stack, name: "kafka", executable: "herald-kafka-dev", arguments: [],
            environment: base.merging([
                "HERALD_KAFKA_DEV_PORT": "\(kafkaPort)",
                "HERALD_KAFKA_DEV_BOOTSTRAP_FILE": stack.directory + "/kafka.address",
            ]) { $1 },
            readiness: "file:" + stack.directory + "/kafka.address")
        say("  ✔ Kafka (dev)     \(stack.kafkaBrokers)")

        // apns-sim, trusting the stack's signing key for any topic.
        let simPort = try ProcessControl.freePort()
        let simAdmin = try ProcessControl.freePort()
        stack.apnsSim = .init(port: simPort, adminPort: simAdmin, certificate: stack.directory + "/apns-sim.pem")
        let key = stack.signingKey
        try await launch(
            &stack, name: "apns-sim", executable: "apns-sim",
            arguments: [
                "--port", "\(simPort)", "--admin-port", "\(simAdmin)",
                "--key", "\(key.keyID):\(key.teamID):\(key.publicKeyFile)",
                "--write-certificate", stack.apnsSim.certificate,
                "--ready-file", stack.directory + "/apns-sim.ready", "--log-level", "warning",
                "--record", apnsSimRecord,
            ],
            environment: base, readiness: "file:" + stack.directory + "/apns-sim.ready")
        say("  ✔ apns-sim        https://127.0.0.1:\(simPort) (admin http://127.0.0.1:\(simAdmin))")

        // The services run as a role that can change nothing in the audit log, as a production
        // installation should (docs/security.md): the owner migrates first.
        try await prepareDatabase(&stack)
        var asService = base
        if let user = stack.postgres.serviceUser, let password = stack.postgres.servicePassword {
            asService["HERALD_POSTGRES_USER"] = user
            asService["HERALD_POSTGRES_PASSWORD"] = password
        }

        // A development stack listens on loopback only (production defaults listen on every
        // interface).
        let services = asService.merging([
            "HERALD_KAFKA_BROKERS": stack.kafkaBrokers,
            "HERALD_MASTER_KEY": stack.masterKey,
            "HERALD_API_HOST": "127.0.0.1", "HERALD_CENTER_METRICS_HOST": "127.0.0.1",
            "HERALD_SENDER_METRICS_HOST": "127.0.0.1", "HERALD_API_METRICS_HOST": "127.0.0.1",
            // Readiness judges the brokers by librdkafka's statistics: report every second here,
            // so the stack is ready a second after it connects.
            "HERALD_KAFKA_STATISTICS_INTERVAL_MS": "1000",
        ]) { $1 }

        // herald-api: one on the API port, or several behind HAProxy there.
        var port = apiPort
        if port == 0 || !ProcessControl.isPortFree(port) {
            if port != 0 { say("    (port \(port) is taken; herald-api gets a free one)") }
            port = try ProcessControl.freePort()
        }
        stack.apiURL = "http://127.0.0.1:\(port)"
        var apiAddresses: [(name: String, port: Int)] = []
        for index in 1...max(apis, 1) {
            let name = Self.instanceName("herald-api", index, of: apis)
            let listen = apis > 1 ? try ProcessControl.freePort() : port
            let operations = try ProcessControl.freePort()
            stack.metricsURLs[name] = "http://127.0.0.1:\(operations)/metrics"
            try await launch(
                &stack, name: name, executable: "herald-api", arguments: [],
                environment: services.merging([
                    "HERALD_API_PORT": "\(listen)", "HERALD_ADMIN_TOKEN": stack.adminToken,
                    "HERALD_API_METRICS_PORT": "\(operations)",
                    // The dev stack serves plain HTTP on loopback: cookies without `Secure`.
                    "HERALD_API_CONSOLE_SECURE_COOKIES": "false",
                ]) { $1 },
                readiness: "http:http://127.0.0.1:\(operations)/readyz")
            apiAddresses.append((name, listen))
            say(
                "  ✔ \(name.padding(toLength: 16, withPad: " ", startingAt: 0))http://127.0.0.1:\(listen)  operations http://127.0.0.1:\(operations)"
            )
        }
        if apis > 1 {
            try await startLoadBalancer(&stack, port: port, backends: apiAddresses)
        }

        // herald-center: the outbox relay, fan-out and accounting.
        for index in 1...max(centers, 1) {
            let name = Self.instanceName("herald-center", index, of: centers)
            let centerMetrics = try ProcessControl.freePort()
            stack.metricsURLs[name] = "http://127.0.0.1:\(centerMetrics)/metrics"
            try await launch(
                &stack, name: name, executable: "herald-center", arguments: [],
                environment: defaults(
                    services.merging([
                        "HERALD_CENTER_METRICS_PORT": "\(centerMetrics)",
                        "HERALD_CENTER_NAME": "center-\(index)",
                    ]) { $1 },
                    [
                        "HERALD_CENTER_CLAIM_LEASE_MS": "5000", "HERALD_CENTER_REDRIVE_AFTER_MS": "60000",
                        // The development broker keeps 5 MiB a partition, some 2,000,000
                        // notifications of herald.jobs: four fan-outs at once fit (docs/operations.md).
                        "HERALD_CENTER_FANOUT_WINDOW": "500000",
                        // Webhook receivers of the dev stack listen on loopback.
                        "HERALD_CENTER_WEBHOOK_PRIVATE_NETWORKS": "allow",
                    ]),
                readiness: "http:http://127.0.0.1:\(centerMetrics)/readyz")
            say("  ✔ \(name.padding(toLength: 16, withPad: " ", startingAt: 0))metrics \(stack.metricsURLs[name]!)")
        }

        if gateways > 0 { try await startGateways(&stack, environment: services) }

        // The senders, pointed at apns-sim for both environments.
        for index in 1...max(senders, 1) {
            let name = "herald-sender-\(index)"
            let metrics = try ProcessControl.freePort()
            stack.metricsURLs[name] = "http://127.0.0.1:\(metrics)/metrics"
            try await launch(
                &stack, name: name, executable: "herald-sender", arguments: [],
                environment: defaults(
                    services.merging([
                        "HERALD_SENDER_METRICS_PORT": "\(metrics)",
                        "HERALD_SENDER_APNS_SANDBOX_HOST": "127.0.0.1", "HERALD_SENDER_APNS_SANDBOX_PORT": "\(simPort)",
                        "HERALD_SENDER_APNS_PRODUCTION_HOST": "127.0.0.1",
                        "HERALD_SENDER_APNS_PRODUCTION_PORT": "\(simPort)",
                        "HERALD_SENDER_APNS_SANDBOX_TRUST_CERTIFICATE_FILE": stack.apnsSim.certificate,
                        "HERALD_SENDER_APNS_PRODUCTION_TRUST_CERTIFICATE_FILE": stack.apnsSim.certificate,
                    ]) { $1 }, ["HERALD_SENDER_BATCH_TAKEOVER_MS": "30000"]),
                readiness: "http:http://127.0.0.1:\(metrics)/readyz")
            say("  ✔ \(name.padding(toLength: 16, withPad: " ", startingAt: 0))metrics \(stack.metricsURLs[name]!)")
        }
        if prometheus { try await startPrometheus(&stack) }
    }

    /// Debian's Prometheus, scraping every process's operations port every 2 s (file-based
    /// service discovery: `<dir>/prometheus/targets.json`, one job per kind of process, named as
    /// Deploy/prometheus/herald-rules.yml expects), with `prometheusRules` loaded.
    private func startPrometheus(_ stack: inout DevStack) async throws {
        let executable = "/usr/bin/prometheus"
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw CLIError("\(executable) not found: apt-get install prometheus (scripts/install-dependencies.sh does)")
        }
        let folder = stack.directory + "/prometheus"
        try FileManager.default.createDirectory(atPath: folder + "/data", withIntermediateDirectories: true)
        var groups: [[String: Any]] = []
        for (name, url) in stack.metricsURLs.sorted(by: { $0.key < $1.key }) {
            guard let address = URL(string: url).flatMap({ url in url.port.map { "\(url.host ?? "127.0.0.1"):\($0)" } })
            else { continue }
            let job = Self.kind(of: name)
            groups.append(["targets": [address], "labels": ["job": job, "process": name]])
        }
        try JSONSerialization.data(withJSONObject: groups, options: [.prettyPrinted, .sortedKeys])
            .write(to: URL(fileURLWithPath: folder + "/targets.json"))
        let rules = prometheusRules.map { URL(fileURLWithPath: $0).standardizedFileURL.path }
        let configuration = """
            global: {scrape_interval: 2s, evaluation_interval: 2s, scrape_timeout: 2s}
            rule_files: [\(rules.map { "\"\($0)\"" }.joined(separator: ", "))]
            scrape_configs:
              - job_name: herald
                file_sd_configs: [{files: ["\(folder)/targets.json"], refresh_interval: 5s}]
            """
        try configuration.write(toFile: folder + "/prometheus.yml", atomically: true, encoding: .utf8)
        let port = try ProcessControl.freePort()
        stack.prometheusURL = "http://127.0.0.1:\(port)"
        let managed = try ProcessControl.spawn(
            DevStack.Managed(
                name: "prometheus", pid: 0, executable: executable,
                arguments: [
                    "--config.file=\(folder)/prometheus.yml", "--storage.tsdb.path=\(folder)/data",
                    "--web.listen-address=127.0.0.1:\(port)", "--log.level=warn",
                ],
                environment: ProcessInfo.processInfo.environment, log: "\(stack.directory)/logs/prometheus.log",
                readiness: "http:http://127.0.0.1:\(port)/-/ready"))
        stack.processes.append(managed)
        try stack.save()
        try await ProcessControl.awaitReady(managed)
        say(
            "  ✔ Prometheus      \(stack.prometheusURL!) (scraping every process every 2 s\(rules.isEmpty ? "" : ", \(rules.count) rule file(s)"))"
        )
    }

    /// The long-connection gateways: one on the gateway port, or several behind HAProxy (TCP mode,
    /// least connections) there, all with one development TLS identity (`<dir>/gateway.crt`, a
    /// self-signed certificate for localhost and 127.0.0.1, made like apns-sim's). Behind the
    /// proxy every connection comes from the proxy's address, so the per-source connection rate
    /// and failed-hello throttle are raised here (an installation keeps the clients' addresses
    /// instead: Deploy/README.md).
    private func startGateways(_ stack: inout DevStack, environment: [String: String]) async throws {
        let (identity, keyPEM) = try SimulatorIdentity.selfSigned()
        let certificate = stack.directory + "/gateway.crt"
        let keyFile = stack.directory + "/gateway.key"
        try identity.certificatePEM.write(toFile: certificate, atomically: true, encoding: .utf8)
        FileManager.default.createFile(
            atPath: keyFile, contents: Data(keyPEM.utf8), attributes: [.posixPermissions: 0o600])
        var port = gatewayPort
        if port == 0 || !ProcessControl.isPortFree(port) {
            if port != 0 { say("    (port \(port) is taken; the gateway gets a free one)") }
            port = try ProcessControl.freePort()
        }
        var backends: [(name: String, port: Int)] = []
        for index in 1...gateways {
            let name = Self.instanceName("herald-gateway", index, of: gateways)
            let listen = gateways > 1 ? try ProcessControl.freePort() : port
            let delivery = try ProcessControl.freePort()
            let metrics = try ProcessControl.freePort()
            stack.metricsURLs[name] = "http://127.0.0.1:\(metrics)/metrics"
            var settings = environment.merging([
                "HERALD_GATEWAY_HOST": "127.0.0.1", "HERALD_GATEWAY_PORT": "\(listen)",
                "HERALD_GATEWAY_TLS_CERTIFICATE_FILE": certificate, "HERALD_GATEWAY_TLS_KEY_FILE": keyFile,
                "HERALD_GATEWAY_NAME": "gateway-\(index)",
                "HERALD_GATEWAY_DELIVERY_HOST": "127.0.0.1", "HERALD_GATEWAY_DELIVERY_PORT": "\(delivery)",
                "HERALD_GATEWAY_DELIVERY_ADDRESS": "127.0.0.1:\(delivery)",
                "HERALD_GATEWAY_METRICS_HOST": "127.0.0.1", "HERALD_GATEWAY_METRICS_PORT": "\(metrics)",
            ]) { $1 }
            if gateways > 1 {
                settings = defaults(
                    settings,
                    [
                        "HERALD_GATEWAY_CONNECTIONS_PER_SECOND": "100000", "HERALD_GATEWAY_CONNECTION_BURST": "100000",
                        "HERALD_GATEWAY_AUTH_FAILURES_PER_MINUTE": "100000",
                    ])
            }
            try await launch(
                &stack, name: name, executable: "herald-gateway", arguments: [], environment: settings,
                readiness: "http:http://127.0.0.1:\(metrics)/readyz")
            backends.append((name, listen))
            say(
                "  ✔ \(name.padding(toLength: 16, withPad: " ", startingAt: 0))tls://127.0.0.1:\(listen)  deliveries 127.0.0.1:\(delivery)  metrics \(stack.metricsURLs[name]!)"
            )
        }
        stack.gatewayAddress = "127.0.0.1:\(port)"
        stack.gatewayCertificate = certificate
        if gateways > 1 { try await startGatewayBalancer(&stack, port: port, backends: backends) }
    }

    /// Debian's HAProxy in TCP mode on the gateway port: each new connection to the gateway with
    /// the fewest, a gateway out of rotation after two failed checks a second apart (its clients
    /// reconnect through the proxy to the others).
    private func startGatewayBalancer(
        _ stack: inout DevStack, port: Int, backends: [(name: String, port: Int)]
    ) async throws {
        let servers = backends.map {
            "    server \($0.name) 127.0.0.1:\($0.port) check inter 1s fall 2 rise 2"
        }.joined(separator: "\n")
        // Two descriptors a connection (client and gateway side), within the process's hard limit.
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        let maximumConnections = max(1000, (Int(clamping: limit.rlim_max) - 200) / 2)
        let configuration = """
            global
                maxconn \(maximumConnections)
                log stderr format raw local0 notice
            defaults
                mode tcp
                log global
                timeout connect 1s
                timeout client 1h
                timeout server 1h
            frontend herald-gateway
                bind 127.0.0.1:\(port)
                default_backend herald-gateway
            backend herald-gateway
                balance leastconn
            \(servers)

            """
        let file = stack.directory + "/haproxy-gateway.cfg"
        try configuration.write(toFile: file, atomically: true, encoding: .utf8)
        let managed = try ProcessControl.spawn(
            DevStack.Managed(
                name: "gateway-balancer", pid: 0, executable: try Self.haproxy(), arguments: ["-f", file, "-db"],
                environment: ProcessInfo.processInfo.environment,
                log: "\(stack.directory)/logs/gateway-balancer.log", readiness: "tcp:127.0.0.1:\(port)"))
        stack.processes.append(managed)
        try stack.save()
        try await ProcessControl.awaitReady(managed)
        say(
            "  ✔ gateway balancer tls://127.0.0.1:\(port) (HAProxy, TCP, least connections over \(backends.count) gateways, at most \(maximumConnections) connections)"
        )
    }

    /// Debian's HAProxy, or a clear error.
    static func haproxy() throws -> String {
        let executable = "/usr/sbin/haproxy"
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw CLIError("\(executable) not found: apt-get install haproxy (scripts/install-dependencies.sh does)")
        }
        return executable
    }

    /// `herald-api` when it runs once, `herald-api-2` when it runs `count` times.
    static func instanceName(_ service: String, _ index: Int, of count: Int) -> String {
        count > 1 ? "\(service)-\(index)" : service
    }

    /// The kind of process a stack name stands for (`herald-sender-3` → `herald-sender`): the
    /// Prometheus job Deploy/prometheus/herald-rules.yml expects.
    static func kind(of name: String) -> String {
        guard let last = name.split(separator: "-").last, Int(last) != nil else { return name }
        return String(name[..<name.lastIndex(of: "-")!])
    }

    /// Debian's HAProxy on the API port, in front of every herald-api: round robin (so an app's
    /// rate limit, shared among the processes, holds), a process out of rotation after two failed
    /// `/readyz` checks a second apart, and a request whose process closed the connection without
    /// answering (killed mid-request) sent again to another one — safe for pushes sent with an
    /// Idempotency-Key, which is why clients should send one.
    private func startLoadBalancer(
        _ stack: inout DevStack, port: Int, backends: [(name: String, port: Int)]
    ) async throws {
        let executable = try Self.haproxy()
        let servers = backends.map {
            "    server \($0.name) 127.0.0.1:\($0.port) check inter 1s fall 2 rise 2"
        }.joined(separator: "\n")
        let configuration = """
            global
                maxconn 4096
                log stderr format raw local0 notice
            defaults
                mode http
                log global
                timeout connect 1s
                timeout client 1h
                timeout server 1h
                timeout http-request 60s
                retries 3
                option redispatch 1
                retry-on conn-failure empty-response response-timeout
            frontend herald-api
                bind 127.0.0.1:\(port)
                default_backend herald-api
            backend herald-api
                balance roundrobin
                option httpchk GET /readyz
                http-check expect status 200
            \(servers)

            """
        let file = stack.directory + "/haproxy.cfg"
        try configuration.write(toFile: file, atomically: true, encoding: .utf8)
        let managed = try ProcessControl.spawn(
            DevStack.Managed(
                name: "load-balancer", pid: 0, executable: executable, arguments: ["-f", file, "-db"],
                environment: ProcessInfo.processInfo.environment, log: "\(stack.directory)/logs/load-balancer.log",
                readiness: "http:\(stack.apiURL)/readyz"))
        stack.processes.append(managed)
        try stack.save()
        try await ProcessControl.awaitReady(managed)
        say("  ✔ load balancer   \(stack.apiURL) (HAProxy, round robin over \(backends.count) herald-api)")
    }

    /// Migrates the stack's database as its owner, and makes the services' login role in
    /// `herald_runtime` (migration 0028 makes that role).
    private func prepareDatabase(_ stack: inout DevStack) async throws {
        var quiet = Logger(label: "herald.dev")
        quiet.logLevel = .warning
        let logger = quiet
        let configuration = try await HeraldConfiguration.load(environment: baseEnvironment(stack))
        let user = "herald_service"
        let password = randomToken(bytes: 18)
        try await HeraldDatabase.withClient(settings: configuration.postgres, logger: logger) { client in
            try await MigrationRunner(client: client, logger: logger).migrate()
            try await client.query(
                PostgresQuery(unsafeSQL: "CREATE ROLE \(user) LOGIN PASSWORD '\(password)' IN ROLE herald_runtime"),
                logger: logger)
        }
        stack.postgres.serviceUser = user
        stack.postgres.servicePassword = password
        say("  ✔ migrated        as \(stack.postgres.user); the services run as \(user) (in herald_runtime)")
    }

    /// This shell's environment without settings that would point the stack elsewhere, plus the
    /// stack's database; the stack's own settings are merged over it. Of the Kafka settings only
    /// the clients' tuning passes (``kafkaTuning``): brokers, security and librdkafka properties
    /// belong to another cluster.
    private func baseEnvironment(_ stack: DevStack) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment.filter { key, _ in
            !(key.hasPrefix("HERALD_POSTGRES_") || key.hasPrefix("HERALD_KAFKA_") && !Self.kafkaTuning.contains(key)
                || key == "HERALD_CONFIG_FILE"
                || key.hasPrefix("HERALD_API_") && !key.hasPrefix("HERALD_API_RATE") || key == "HERALD_CLI_CONFIG")
        }
        environment["HERALD_POSTGRES_HOST"] = "127.0.0.1"
        environment["HERALD_POSTGRES_PORT"] = "\(stack.postgres.port)"
        environment["HERALD_POSTGRES_USER"] = stack.postgres.user
        environment["HERALD_POSTGRES_PASSWORD"] = stack.postgres.password
        environment["HERALD_POSTGRES_DATABASE"] = stack.postgres.database
        return environment
    }

    /// Kafka settings of the shell that reach the stack's processes: how the clients batch, wait,
    /// compress and log, not where they connect.
    static let kafkaTuning: Set<String> = [
        "HERALD_KAFKA_LINGER_MS", "HERALD_KAFKA_FETCH_WAIT_MAX_MS", "HERALD_KAFKA_COMPRESSION",
        "HERALD_KAFKA_CONSUMER_QUEUE_KB", "HERALD_KAFKA_DEBUG", "HERALD_KAFKA_SESSION_TIMEOUT_MS",
        "HERALD_KAFKA_HEARTBEAT_INTERVAL_MS", "HERALD_KAFKA_READY_POLL_WITHIN_MS",
    ]

    /// `values` only where the environment does not already set them (the user's overrides win).
    private func defaults(_ environment: [String: String], _ values: [String: String]) -> [String: String] {
        environment.merging(values) { existing, _ in existing }
    }

    private func launch(
        _ stack: inout DevStack, name: String, executable: String, arguments: [String],
        environment: [String: String], readiness: String
    ) async throws {
        let managed = try ProcessControl.spawn(
            DevStack.Managed(
                name: name, pid: 0, executable: "\(binDirectory)/\(executable)", arguments: arguments,
                environment: environment,
                log: "\(stack.directory)/logs/\(name).log", readiness: readiness))
        stack.processes.append(managed)
        try stack.save()
        try await ProcessControl.awaitReady(managed)
    }

    /// A P-256 provider key in Apple's `.p8` form, trusted by the stack's apns-sim.
    private func makeSigningKey(in directory: String) throws -> DevStack.SigningKey {
        let key = P256.Signing.PrivateKey()
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        let keyID = String((0..<10).map { _ in alphabet.randomElement()! })
        let privateFile = "\(directory)/AuthKey_\(keyID).p8"
        let publicFile = "\(directory)/AuthKey_\(keyID).pub.pem"
        FileManager.default.createFile(
            atPath: privateFile, contents: Data(key.pemRepresentation.utf8),
            attributes: [.posixPermissions: 0o600])
        FileManager.default.createFile(atPath: publicFile, contents: Data(key.publicKey.pemRepresentation.utf8))
        return .init(keyID: keyID, teamID: "HERALDDEV1", privateKeyFile: privateFile, publicKeyFile: publicFile)
    }

    /// Stops every process (senders first, the broker last), then PostgreSQL; deletes the
    /// stack's folder unless `keepData`.
    static func down(_ stack: DevStack, keepData: Bool, say: (String) -> Void) async {
        for managed in stack.processes.reversed() {
            let wasAlive = ProcessControl.isAlive(managed.pid)
            await ProcessControl.stop(managed.pid)
            if wasAlive { say("  ✔ stopped \(managed.name)") }
        }
        do {
            try DevPostgres.stop(stack.postgres)
            say("  ✔ stopped PostgreSQL")
        } catch {
            say("  ✘ PostgreSQL: \(error)")
        }
        if !keepData { try? FileManager.default.removeItem(atPath: stack.directory) }
    }
}
