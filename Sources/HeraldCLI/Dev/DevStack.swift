import Foundation

/// The local development stack `herald dev up` starts and `herald dev down` stops, as written to
/// `<dir>/stack.json` (mode 0600: it holds the stack's throwaway secrets). Every process is a
/// child started in a session of its own, so it outlives the `herald dev up` that started it,
/// with its output in `<dir>/logs/<name>.log`.
struct DevStack: Codable {
    struct Postgres: Codable {
        var port: Int
        var user: String
        var password: String
        var database: String
        /// The login role the services run as: a member of `herald_runtime`, which may only read
        /// and append the audit log (docs/security.md); `user` owns the tables and migrates.
        var serviceUser: String?
        var servicePassword: String?
        var dataDirectory: String
        var binDirectory: String
        var log: String
    }

    struct APNsSim: Codable {
        var port: Int
        var adminPort: Int
        var certificate: String
    }

    struct SigningKey: Codable {
        var keyID: String
        var teamID: String
        var privateKeyFile: String
        var publicKeyFile: String
    }

    /// A process of the stack and how to start it again (`herald dev start NAME`).
    struct Managed: Codable {
        var name: String
        var pid: Int32
        var executable: String
        var arguments: [String]
        var environment: [String: String]
        var log: String
        /// How readiness is seen: `file:PATH` (exists), `http:URL` (answers 200).
        var readiness: String
    }

    var directory: String
    var binDirectory: String
    var apiURL: String
    var adminToken: String
    var masterKey: String
    var postgres: Postgres
    var kafkaBrokers: String
    var apnsSim: APNsSim
    var signingKey: SigningKey
    var metricsURLs: [String: String]
    var processes: [Managed]
    /// Prometheus scraping the stack (`herald dev up --prometheus`), if it runs.
    var prometheusURL: String?

    static func file(in directory: String) -> String { directory + "/stack.json" }

    static func load(from directory: String) throws -> DevStack {
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

    func save() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let path = Self.file(in: directory)
        FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600])
        try encoder.encode(self).write(to: URL(fileURLWithPath: path))
    }

    /// The position of the process called `name`, or an error that lists the names there are.
    func index(of name: String) throws -> Int {
        guard let index = processes.firstIndex(where: { $0.name == name }) else {
            throw CLIError(
                "no process \(name) in the stack; it has postgres, \(processes.map(\.name).joined(separator: ", "))")
        }
        return index
    }

    /// The environment a shell needs to use this stack with the CLI and curl.
    var shellExports: [(String, String)] {
        [
            ("HERALD_CLI_CONFIG", directory + "/cli.json"), ("HERALD_API_URL", apiURL),
            ("HERALD_ADMIN_TOKEN", adminToken),
        ]
    }
}
