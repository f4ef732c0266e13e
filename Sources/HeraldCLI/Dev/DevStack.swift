import ArgumentParser
import Foundation

/// The local development stack `herald dev up` starts and `herald dev down` stops, as written to
/// `<dir>/stack.json` (mode 0600: it holds the stack's throwaway secrets). Every process is a
/// child started in a session of its own, so it outlives the `herald dev up` that started it,
/// with its output in `<dir>/logs/<name>.log`.
package struct DevStack: Codable {
    package struct Postgres: Codable {
        package var port: Int
        package var user: String
        package var password: String
        package var database: String
        /// The login role the services run as: a member of `herald_runtime`, which may only read
        /// and append the audit log (docs/security.md); `user` owns the tables and migrates.
        package var serviceUser: String?
        package var servicePassword: String?
        package var dataDirectory: String
        package var binDirectory: String
        package var log: String

        package init(
            port: Int, user: String, password: String, database: String, serviceUser: String? = nil,
            servicePassword: String? = nil, dataDirectory: String, binDirectory: String, log: String
        ) {
            self.port = port
            self.user = user
            self.password = password
            self.database = database
            self.serviceUser = serviceUser
            self.servicePassword = servicePassword
            self.dataDirectory = dataDirectory
            self.binDirectory = binDirectory
            self.log = log
        }
    }

    package struct APNsSim: Codable {
        package var port: Int
        package var adminPort: Int
        package var certificate: String

        package init(port: Int, adminPort: Int, certificate: String) {
            self.port = port
            self.adminPort = adminPort
            self.certificate = certificate
        }
    }

    package struct SigningKey: Codable {
        package var keyID: String
        package var teamID: String
        package var privateKeyFile: String
        package var publicKeyFile: String

        package init(keyID: String, teamID: String, privateKeyFile: String, publicKeyFile: String) {
            self.keyID = keyID
            self.teamID = teamID
            self.privateKeyFile = privateKeyFile
            self.publicKeyFile = publicKeyFile
        }
    }

    /// A process of the stack and how to start it again (`herald dev start NAME`).
    package struct Managed: Codable {
        package var name: String
        package var pid: Int32
        package var executable: String
        package var arguments: [String]
        package var environment: [String: String]
        package var log: String
        /// How readiness is seen: `file:PATH` (exists), `http:URL` (answers 200), `tcp:HOST:PORT`
        /// (something listens on the loopback port).
        package var readiness: String

        package init(
            name: String, pid: Int32, executable: String, arguments: [String], environment: [String: String],
            log: String, readiness: String
        ) {
            self.name = name
            self.pid = pid
            self.executable = executable
            self.arguments = arguments
            self.environment = environment
            self.log = log
            self.readiness = readiness
        }
    }

    package var directory: String
    package var binDirectory: String
    package var apiURL: String
    package var adminToken: String
    package var masterKey: String
    package var postgres: Postgres
    package var kafkaBrokers: String
    package var apnsSim: APNsSim
    package var signingKey: SigningKey
    package var metricsURLs: [String: String]
    package var processes: [Managed]
    /// Prometheus scraping the stack (`herald dev up --prometheus`), if it runs.
    package var prometheusURL: String?
    /// Where apps connect to the stack's herald-gateways (`127.0.0.1:7443`: one gateway, or HAProxy
    /// in front of several), and the certificate to trust; nil when it runs none (`--gateways 0`).
    package var gatewayAddress: String?
    package var gatewayCertificate: String?

    package init(
        directory: String, binDirectory: String, apiURL: String, adminToken: String, masterKey: String,
        postgres: Postgres, kafkaBrokers: String, apnsSim: APNsSim, signingKey: SigningKey,
        metricsURLs: [String: String], processes: [Managed], prometheusURL: String? = nil
    ) {
        self.directory = directory
        self.binDirectory = binDirectory
        self.apiURL = apiURL
        self.adminToken = adminToken
        self.masterKey = masterKey
        self.postgres = postgres
        self.kafkaBrokers = kafkaBrokers
        self.apnsSim = apnsSim
        self.signingKey = signingKey
        self.metricsURLs = metricsURLs
        self.processes = processes
        self.prometheusURL = prometheusURL
    }

    package static func file(in directory: String) -> String { directory + "/stack.json" }

    package static func load(from directory: String) throws -> DevStack {
        let path = file(in: directory)
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CLIError("no development stack in \(directory): run `herald dev up` (or pass --dir)")
        }
        do {
            return try JSONDecoder().decode(DevStack.self, from: data)
        } catch {
            throw CLIError("\(path) is unreadable (\(error)): delete \(directory) after stopping its processes")
        }
    }

    package func save() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let path = Self.file(in: directory)
        FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600])
        try encoder.encode(self).write(to: URL(fileURLWithPath: path))
    }

    /// The position of the process called `name`, or an error that lists the names there are.
    package func index(of name: String) throws -> Int {
        guard let index = processes.firstIndex(where: { $0.name == name }) else {
            throw CLIError(
                "no process \(name) in the stack; it has postgres, \(processes.map(\.name).joined(separator: ", "))")
        }
        return index
    }

    /// The environment a shell needs to use this stack with the CLI and curl.
    package var shellExports: [(String, String)] {
        [
            ("HERALD_CLI_CONFIG", directory + "/cli.json"), ("HERALD_API_URL", apiURL),
            ("HERALD_ADMIN_TOKEN", adminToken),
        ]
    }
}

/// The stack's folder option of every `herald dev` command (and of `app credentials set
/// --dev-stack-key`).
package struct DevDirectoryOption: ParsableArguments {
    package init() {}

    @Option(
        name: .customLong("dir"), help: "The stack's folder (state, logs, keys; default .local/dev or HERALD_DEV_DIR).")
    package var directory: String?

    package var path: String {
        let chosen = directory ?? ProcessInfo.processInfo.environment["HERALD_DEV_DIR"] ?? ".local/dev"
        return URL(fileURLWithPath: chosen).standardizedFileURL.path
    }
}
