import Foundation
import HeraldCLI

/// The stack's throwaway PostgreSQL cluster: initdb'd in `<dir>/postgres`, listening on
/// 127.0.0.1 only, with a random password; deleted by `herald dev down`. As root the server runs
/// as the `postgres` user (PostgreSQL refuses root).
enum DevPostgres {
    static var isRoot: Bool { getuid() == 0 }

    static func binDirectory() throws -> String {
        let base = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: base)) ?? []
        guard let newest = versions.compactMap(Int.init).max() else {
            throw CLIError("PostgreSQL's server is not installed: apt-get install postgresql (or run `make deps`)")
        }
        return "\(base)/\(newest)/bin"
    }

    /// Runs a PostgreSQL program as the cluster's owner.
    static func asOwner(_ program: String, _ arguments: [String], environment: [String: String]? = nil) throws {
        if isRoot {
            try ProcessControl.run(
                "/usr/sbin/runuser", ["-u", "postgres", "--", program] + arguments, environment: environment)
        } else {
            try ProcessControl.run(program, arguments, environment: environment)
        }
    }

    static func create(directory: String, port: Int) throws -> DevStack.Postgres {
        let bin = try binDirectory()
        let root = directory + "/postgres"
        let settings = DevStack.Postgres(
            port: port, user: "herald", password: randomToken(bytes: 18), database: "herald",
            dataDirectory: root + "/data", binDirectory: bin, log: directory + "/logs/postgres.log")
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let passwordFile = root + "/initdb-password"
        FileManager.default.createFile(
            atPath: passwordFile, contents: Data((settings.password + "\n").utf8),
            attributes: [.posixPermissions: 0o600])
        FileManager.default.createFile(atPath: settings.log, contents: nil)
        if isRoot {
            // The server user must reach the folders and own its own.
            makeTraversable(root)
            try ProcessControl.run("/bin/chown", ["-R", "postgres:postgres", root, settings.log])
        }
        defer { try? FileManager.default.removeItem(atPath: passwordFile) }
        try asOwner(
            bin + "/initdb",
            [
                "-D", settings.dataDirectory, "-U", settings.user, "--pwfile=\(passwordFile)",
                "--auth=scram-sha-256", "--encoding=UTF8", "--locale=C.UTF-8",
            ])
        try start(settings)
        try ProcessControl.run(
            bin + "/createdb", ["-h", "127.0.0.1", "-p", "\(port)", "-U", settings.user, settings.database],
            environment: ["PGPASSWORD": settings.password])
        return settings
    }

    static func start(_ settings: DevStack.Postgres) throws {
        let options =
            "-c listen_addresses=127.0.0.1 -c port=\(settings.port) -c unix_socket_directories=\(settings.dataDirectory)/.. "
            + "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200 -c shared_buffers=256MB"
        try asOwner(
            settings.binDirectory + "/pg_ctl",
            [
                "-D", settings.dataDirectory, "-l", settings.log, "-w", "-t", "60",
                "-o", options, "start",
            ])
    }

    static func stop(_ settings: DevStack.Postgres) throws {
        guard isRunning(settings) else { return }
        try asOwner(settings.binDirectory + "/pg_ctl", ["-D", settings.dataDirectory, "-m", "fast", "-w", "stop"])
    }

    static func isRunning(_ settings: DevStack.Postgres) -> Bool {
        (try? asOwner(settings.binDirectory + "/pg_ctl", ["-D", settings.dataDirectory, "status"])) != nil
    }

    /// Adds o+x to `path` and its ancestors so that the `postgres` user can reach it.
    static func makeTraversable(_ path: String) {
        var url = URL(fileURLWithPath: path).standardizedFileURL
        while url.path != "/" {
            if let attributes = try? FileManager.default.attributesOfItem(atPath: url.path),
                let mode = attributes[.posixPermissions] as? Int, mode & 0o001 == 0
            {
                chmod(url.path, mode_t(mode | 0o001))
            }
            url.deleteLastPathComponent()
        }
    }
}

/// Random bytes as URL-safe base64 without padding: throwaway passwords and tokens.
func randomToken(bytes: Int) -> String {
    var generator = SystemRandomNumberGenerator()
    let data = Data((0..<bytes).map { _ in UInt8.random(in: 0...255, using: &generator) })
    return data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        .replacingOccurrences(of: "=", with: "")
}
