import ArgumentParser
import Foundation

/// `herald app`: apps and their APNs credentials (the admin token).
struct AppCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "app",
        abstract: "Create and list apps; store an app's APNs credentials (needs the admin token).",
        subcommands: [AppCreateCommand.self, AppListCommand.self, AppCredentialsCommand.self]
    )
}

struct AppCreateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create",
        abstract: "Create an app with its first server key and client key (shown once).")

    @Option(help: "The app's name.") var name: String
    @Option(name: .customLong("bundle-id"), help: "The iOS bundle id (the APNs topic), e.g. com.example.weather.")
    var bundleID: String
    @Flag(help: "Save the app id and its server key in the CLI's config file, for the commands that follow.")
    var save = false

    func run() async throws {
        let configuration = try ClientConfiguration.load()
        let answer = try await APIClient.admin(configuration).post(
            "/v1/apps", json: ["name": name, "bundle_id": bundleID])
        let app = answer.body["app"] as? [String: Any] ?? [:]
        let appID = app["id"] as? String ?? "?"
        let serverKey = (answer.body["server_key"] as? [String: Any])?["key"] as? String ?? "?"
        let clientKey = (answer.body["client_key"] as? [String: Any])?["key"] as? String ?? "?"
        print("app \(appID) (\(name), \(bundleID))")
        print("  server key  \(serverKey)   ← your back-end's; shown this once")
        print("  client key  \(clientKey)   ← for your app's SDK (registers devices only)")
        if save {
            try ClientConfiguration.save(["app_id": appID, "api_key": serverKey], to: configuration.file)
            print("  saved the app id and server key in \(configuration.file.path)")
        } else {
            print("  use it: export HERALD_API_KEY=\(serverKey)")
        }
    }
}

struct AppListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List the apps.")

    func run() async throws {
        let client = try APIClient.admin(try ClientConfiguration.load())
        for app in try await client.everyItem("/v1/apps", key: "apps", limit: 100) {
            print(
                "\(app["id"] as? String ?? "?")  \(app["bundle_id"] as? String ?? "?")  \(app["name"] as? String ?? "")"
            )
        }
    }
}

struct AppCredentialsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "credentials",
        abstract: "Store an app's APNs credentials for one environment: a .p8 token key, or a certificate.",
        discussion: """
            Token key:    herald app credentials --p8 AuthKey_ABCDE12345.p8 --key-id ABCDE12345 --team-id TEAM123456
            Dev stack:    herald app credentials --dev-stack-key   (the key apns-sim of `herald dev up` trusts)
            Certificate:  herald app credentials --certificate cert.pem --private-key key.pem
            PKCS#12:      HERALD_P12_PASSPHRASE=… herald app credentials --pkcs12 push.p12
            The private key is sealed under herald-api's master key and never shown again.
            """)

    @Option(name: .customLong("app"), help: "The app id (default: the one saved by `herald app create --save`).")
    var appID: String?
    @Option(help: "sandbox or production.") var environment: String = "sandbox"
    @Option(help: "A .p8 token key file from Apple.") var p8: String?
    @Option(name: .customLong("key-id"), help: "The token key's Key ID (10 characters).") var keyID: String?
    @Option(name: .customLong("team-id"), help: "Your Team ID (10 characters).") var teamID: String?
    @Option(help: "A PEM certificate (chain) for certificate-based authentication.") var certificate: String?
    @Option(name: .customLong("private-key"), help: "The certificate's PEM private key (if not in --certificate).")
    var privateKey: String?
    @Option(help: "A PKCS#12 file; its passphrase is read from HERALD_P12_PASSPHRASE.") var pkcs12: String?
    @Flag(
        name: .customLong("dev-stack-key"),
        help: "The token key of the `herald dev` stack in HERALD_DEV_DIR (or .local/dev), which its apns-sim trusts.")
    var devStackKey = false

    func validate() throws {
        guard ["sandbox", "production"].contains(environment) else {
            throw ValidationError("--environment is sandbox or production")
        }
        let kinds = [p8, certificate, pkcs12].compactMap { $0 }.count + (devStackKey ? 1 : 0)
        guard kinds == 1 else {
            throw ValidationError("give exactly one of --p8, --certificate, --pkcs12 or --dev-stack-key")
        }
        if p8 != nil, keyID == nil || teamID == nil { throw ValidationError("--p8 needs --key-id and --team-id") }
    }

    func run() async throws {
        let configuration = try ClientConfiguration.load()
        guard let app = appID ?? configuration.appID else {
            throw CLIError("which app? pass --app ID (or run `herald app create --save` first)")
        }
        var body: [String: Any]
        if devStackKey {
            let key = try DevStack.load(from: DevDirectoryOption.parse([]).path).signingKey
            body = [
                "kind": "token", "key_id": key.keyID, "team_id": key.teamID,
                "private_key": try Self.read(key.privateKeyFile),
            ]
        } else if let p8 {
            body = ["kind": "token", "key_id": keyID ?? "", "team_id": teamID ?? "", "private_key": try Self.read(p8)]
        } else if let certificate {
            // Without --private-key the certificate file is taken to hold the key too (one PEM file).
            body = [
                "kind": "certificate", "certificate_pem": try Self.read(certificate),
                "private_key": try Self.read(privateKey ?? certificate),
            ]
        } else {
            let data = try Data(contentsOf: URL(fileURLWithPath: pkcs12 ?? ""))
            body = [
                "kind": "certificate", "pkcs12_base64": data.base64EncodedString(),
                "passphrase": ProcessInfo.processInfo.environment["HERALD_P12_PASSPHRASE"] ?? "",
            ]
        }
        let answer = try await APIClient.admin(configuration).put(
            "/v1/apps/\(app)/credentials/\(environment)", json: body)
        let kind = answer.body["kind"] as? String ?? "?"
        var line = "stored \(kind) credentials for \(environment) of app \(app)"
        if let key = answer.body["key_id"] as? String {
            line += " (key \(key), team \(answer.body["team_id"] as? String ?? "?"))"
        }
        if let expiry = answer.body["certificate_expires_at"] as? String { line += " (certificate expires \(expiry))" }
        print(line)
    }

    static func read(_ path: String) throws -> String {
        do {
            return try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw CLIError("cannot read \(path): \(error.localizedDescription)")
        }
    }
}
