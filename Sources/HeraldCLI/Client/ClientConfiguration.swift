import Foundation

/// Where the CLI finds herald-api and the secrets it presents: environment variables first
/// (`HERALD_API_URL`, `HERALD_API_KEY`, `HERALD_ADMIN_TOKEN`), then the config file named by
/// `HERALD_CLI_CONFIG` (default `~/.config/herald/cli.json`), then `http://127.0.0.1:8080`.
///
/// The file is JSON: `{"api_url": …, "api_key": …, "app_id": …, "admin_token": …}`, written with
/// mode 0600 by `herald dev up` and `herald app create --save`.
package struct ClientConfiguration {
    package var apiURL: String
    package var apiKey: String?
    package var adminToken: String?
    package var appID: String?
    package let file: URL

    /// The config file `environment` names (`HERALD_CLI_CONFIG`), or `~/.config/herald/cli.json`.
    package static func defaultFile(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        if let path = environment["HERALD_CLI_CONFIG"], !path.isEmpty {
            return URL(fileURLWithPath: path)
        }
        let home = environment["HOME"] ?? NSHomeDirectory()
        return URL(fileURLWithPath: home).appendingPathComponent(".config/herald/cli.json")
    }

    /// Reads the environment, then the config file.
    /// - Throws: ``CLIError`` when the file exists but is not a JSON object of strings.
    package static func load(environment: [String: String] = ProcessInfo.processInfo.environment) throws
        -> ClientConfiguration
    {
        let file = defaultFile(environment: environment)
        var stored: [String: String] = [:]
        if FileManager.default.fileExists(atPath: file.path) {
            do {
                let data = try Data(contentsOf: file)
                guard let object = try JSONSerialization.jsonObject(with: data) as? [String: String] else {
                    throw CLIError("\(file.path) is not a JSON object of strings: fix or delete it")
                }
                stored = object
            } catch let error as CLIError {
                throw error
            } catch {
                throw CLIError("cannot read \(file.path) (\(error.localizedDescription)): fix or delete it")
            }
        }
        func value(_ variable: String, _ key: String) -> String? {
            if let value = environment[variable], !value.isEmpty { return value }
            return stored[key].flatMap { $0.isEmpty ? nil : $0 }
        }
        return ClientConfiguration(
            apiURL: value("HERALD_API_URL", "api_url") ?? "http://127.0.0.1:8080",
            apiKey: value("HERALD_API_KEY", "api_key"),
            adminToken: value("HERALD_ADMIN_TOKEN", "admin_token"),
            appID: value("HERALD_APP_ID", "app_id"),
            file: file)
    }

    /// Merges `values` into the config file (created 0600 with its folder if missing).
    package static func save(_ values: [String: String], to file: URL) throws {
        var stored: [String: String] = [:]
        if let data = try? Data(contentsOf: file),
            let existing = try? JSONSerialization.jsonObject(with: data) as? [String: String]
        {
            stored = existing
        }
        stored.merge(values) { _, new in new }
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        let data = try JSONSerialization.data(withJSONObject: stored, options: [.prettyPrinted, .sortedKeys])
        FileManager.default.createFile(atPath: file.path, contents: nil, attributes: [.posixPermissions: 0o600])
        try data.write(to: file)
    }

    package func requireKey() throws -> String {
        guard let apiKey else {
            throw CLIError(
                "no app key: run `herald app create --save` or set HERALD_API_KEY (a server key, hs_…)",
                status: .notAllowed)
        }
        return apiKey
    }

    package func requireAdminToken() throws -> String {
        guard let adminToken else {
            throw CLIError(
                "no admin token: set HERALD_ADMIN_TOKEN to herald-api's admin token (`herald dev up` writes it to its config file)",
                status: .notAllowed)
        }
        return adminToken
    }
}
