import ArgumentParser
import Foundation
import HeraldAPNs
import HeraldCLI
import HeraldTiming

/// Where the stack lives: `--dir`, else HERALD_DEV_DIR, else `.local/dev` under the current folder.
struct DevUpCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "up",
        abstract:
            "Start PostgreSQL, the development broker, apns-sim, herald-api, herald-center, the gateway and the senders.",
        discussion: """
            Each is a child process with its log in <dir>/logs; the command returns once all are ready \
            and prints their addresses. Settings in this shell's HERALD_* variables (say \
            HERALD_SENDER_CONNECTIONS) reach the processes; the addresses and secrets are the stack's own.
            """)

    @OptionGroup var dir: DevDirectoryOption
    @Option(help: "herald-sender processes.") var senders: Int = 2
    @Option(help: "herald-api processes; more than one run behind HAProxy on the API port.") var apis: Int = 1
    @Option(help: "herald-center processes.") var centers: Int = 1
    @Option(
        help:
            "herald-gateway processes (the long connection; 0: none); more than one run behind HAProxy in TCP mode on the gateway port."
    )
    var gateways: Int = 1
    @Option(
        name: .customLong("gateway-port"),
        help: "Where apps connect to the gateway (a free one if taken; 0 always picks a free one).")
    var gatewayPort: Int = 7443
    @Option(name: .customLong("api-port"), help: "herald-api's port (a free one if taken; 0 always picks a free one).")
    var apiPort: Int = 8080
    @Option(name: .customLong("bin-dir"), help: "Where the executables are (default: beside this one).")
    var binDirectory: String?
    @Option(
        name: .customLong("apns-sim-record"),
        help: "full (apns-sim keeps every notification, for `herald dev verify`) or counts (millions).")
    var apnsSimRecord: String = "full"
    @Flag(help: "Also start Debian's Prometheus (/usr/bin/prometheus) scraping every process.") var prometheus = false
    @Option(
        name: .customLong("prometheus-rules"),
        help: "A rule file for that Prometheus (repeatable), e.g. Deploy/prometheus/herald-rules.yml.")
    var prometheusRules: [String] = []

    func validate() throws {
        guard (1...16).contains(senders) else {
            throw ValidationError("--senders is 1 to 16 (herald.jobs has 16 partitions)")
        }
        guard (1...8).contains(apis), (1...8).contains(centers) else {
            throw ValidationError("--apis and --centers are 1 to 8")
        }
        guard (0...8).contains(gateways) else { throw ValidationError("--gateways is 0 to 8") }
        guard ["full", "counts"].contains(apnsSimRecord) else {
            throw ValidationError("--apns-sim-record is full or counts")
        }
    }

    func run() async throws {
        let bin = binDirectory ?? Bundle.main.executableURL?.deletingLastPathComponent().path ?? "."
        print("herald dev up: starting the stack in \(dir.path)")
        let started = ContinuousClock.now
        let stack = try await DevStackLauncher(
            directory: dir.path, binDirectory: bin, senders: senders, apiPort: apiPort, apis: apis,
            centers: centers, apnsSimRecord: apnsSimRecord, gateways: gateways, gatewayPort: gatewayPort,
            prometheus: prometheus || !prometheusRules.isEmpty,
            prometheusRules: prometheusRules
        ).up()
        print(
            "ready in \(String(format: "%.1f", (ContinuousClock.now - started).fractionalSeconds)) s. Logs: \(stack.directory)/logs"
        )
        print(
            "APNs signing key for apps: \(stack.signingKey.privateKeyFile) (key id \(stack.signingKey.keyID), team \(stack.signingKey.teamID))"
        )
        print("Use it from this shell:")
        for (name, value) in stack.shellExports { print("  export \(name)=\(value)") }
        print("  herald app create --name Demo --bundle-id com.example.demo --save")
        print("Stop it: herald dev down\(dir.directory.map { " --dir \($0)" } ?? "")")
    }
}

struct DevDownCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "down", abstract: "Stop the stack and delete its data.")

    @OptionGroup var dir: DevDirectoryOption
    @Flag(help: "Keep the folder (logs, database files).") var keep = false

    func run() async throws {
        let stack = try DevStack.load(from: dir.path)
        print("herald dev down: \(stack.directory)")
        await DevStackLauncher.down(stack, keepData: keep) { print($0) }
    }
}

struct DevStatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "The stack's processes, addresses and logs.")

    @OptionGroup var dir: DevDirectoryOption
    @Flag(help: "Print stack.json's processes as JSON lines (name, pid, alive).") var json = false

    func run() async throws {
        let stack = try DevStack.load(from: dir.path)
        let postgresUp = DevPostgres.isRunning(stack.postgres)
        if json {
            CommandSupport.printJSON(["name": "postgres", "pid": 0, "alive": postgresUp])
            for managed in stack.processes {
                CommandSupport.printJSON([
                    "name": managed.name, "pid": Int(managed.pid), "alive": ProcessControl.isAlive(managed.pid),
                ])
            }
            return
        }
        print("PostgreSQL      127.0.0.1:\(stack.postgres.port)  \(postgresUp ? "running" : "STOPPED")")
        for managed in stack.processes {
            let alive = ProcessControl.isAlive(managed.pid)
            print(
                "\(managed.name.padding(toLength: 16, withPad: " ", startingAt: 0))pid \(managed.pid)  \(alive ? "running" : "STOPPED")  \(managed.log)"
            )
        }
        print("herald-api      \(stack.apiURL)")
        print(
            "apns-sim        https://127.0.0.1:\(stack.apnsSim.port)  admin http://127.0.0.1:\(stack.apnsSim.adminPort)"
        )
        print("Kafka           \(stack.kafkaBrokers)")
        if let gateway = stack.gatewayAddress {
            print("herald-gateway  tls://\(gateway)  (trust \(stack.gatewayCertificate ?? "-"))")
        }
        for (name, url) in stack.metricsURLs.sorted(by: { $0.key < $1.key }) { print("metrics         \(name) \(url)") }
    }
}

struct DevEnvCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "env", abstract: "Print `export` lines for this stack: eval \"$(herald dev env)\".")

    @OptionGroup var dir: DevDirectoryOption

    func run() async throws {
        let stack = try DevStack.load(from: dir.path)
        for (name, value) in stack.shellExports { print("export \(name)=\(value)") }
        print("export HERALD_DEV_APNS_SIM_ADMIN=http://127.0.0.1:\(stack.apnsSim.adminPort)")
        // For talking to apns-sim as Apple's clients do (curl, h2load; the end-to-end benchmark's
        // reference): its URL, CA, and a provider token of the stack's key, valid for an hour.
        print("export HERALD_DEV_APNS_SIM_URL=https://127.0.0.1:\(stack.apnsSim.port)")
        print("export HERALD_DEV_APNS_SIM_CA=\(stack.apnsSim.certificate)")
        let key = try APNsSigningKey(
            pem: String(contentsOfFile: stack.signingKey.privateKeyFile, encoding: .utf8),
            keyID: stack.signingKey.keyID, teamID: stack.signingKey.teamID)
        print(
            "export HERALD_DEV_APNS_PROVIDER_TOKEN=\(key.providerToken(issuedAt: Int64(Date().timeIntervalSince1970)))")
        if let prometheus = stack.prometheusURL { print("export HERALD_DEV_PROMETHEUS=\(prometheus)") }
        // Where the app's long connection goes, and the development certificate to trust there.
        if let gateway = stack.gatewayAddress {
            print("export HERALD_DEV_GATEWAY=\(gateway)")
            print("export HERALD_DEV_GATEWAY_CA=\(stack.gatewayCertificate ?? "")")
        }
    }
}

/// `herald dev stop NAME` / `herald dev start NAME`: what the failure tests (and curious SREs)
/// do to one process: SIGTERM or SIGKILL it, or stop PostgreSQL; then start it again.
struct DevStopCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stop",
        abstract:
            "Stop one process of the stack (postgres, kafka, apns-sim, herald-api, herald-center, herald-gateway, herald-sender-N)."
    )

    @OptionGroup var dir: DevDirectoryOption
    @Argument(help: "The process's name (as `herald dev status` lists it).") var name: String
    @Flag(help: "SIGKILL instead of SIGTERM: no chance to finish anything.") var kill = false

    func run() async throws {
        let stack = try DevStack.load(from: dir.path)
        if name == "postgres" {
            try DevPostgres.stop(stack.postgres)
            print("stopped postgres")
            return
        }
        let managed = stack.processes[try stack.index(of: name)]
        if kill { await ProcessControl.killNow(managed.pid) } else { await ProcessControl.stop(managed.pid) }
        print("\(kill ? "killed" : "stopped") \(name) (pid \(managed.pid))")
    }
}

struct DevStartCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "start",
        abstract: "Start a stopped process of the stack again, with the same settings, and await it.")

    @OptionGroup var dir: DevDirectoryOption
    @Argument(help: "The process's name.") var name: String

    func run() async throws {
        var stack = try DevStack.load(from: dir.path)
        if name == "postgres" {
            try DevPostgres.start(stack.postgres)
            print("started postgres")
            return
        }
        let index = try stack.index(of: name)
        guard !ProcessControl.isAlive(stack.processes[index].pid) else {
            throw CLIError("\(name) is running (pid \(stack.processes[index].pid)); stop it first")
        }
        var managed = stack.processes[index]
        if managed.readiness.hasPrefix("file:") {
            try? FileManager.default.removeItem(atPath: String(managed.readiness.dropFirst(5)))
        }
        managed = try ProcessControl.spawn(managed)
        stack.processes[index] = managed
        try stack.save()
        try await ProcessControl.awaitReady(managed)
        print("started \(name) (pid \(managed.pid))")
    }
}
