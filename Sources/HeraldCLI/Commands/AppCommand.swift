import ArgumentParser
import Foundation
import HeraldAPIContract

/// `herald app`: apps, their keys, APNs credentials, identity secret and audit log (the admin
/// token, or for one app its admin key, in `HERALD_ADMIN_TOKEN`).
struct AppCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "app",
        abstract:
            "Apps, their API keys, APNs credentials, identity secret and audit log (needs the admin token, or the app's admin key as HERALD_ADMIN_TOKEN).",
        subcommands: [
            AppCreateCommand.self, AppListCommand.self, AppGetCommand.self, AppUpdateCommand.self,
            AppDeleteCommand.self, AppKeysCommand.self, AppCredentialsCommand.self, AppIdentitySecretCommand.self,
            AppAuditCommand.self,
        ]
    )
}

/// `--app ID`, or the app saved by `herald app create --save`.
struct AppOption: ParsableArguments {
    @Option(name: .customLong("app"), help: "The app id (default: the one saved by `herald app create --save`).")
    var appID: String?

    func resolve(_ configuration: ClientConfiguration) throws -> String {
        guard let app = appID ?? configuration.appID else {
            throw CLIError("which app? pass --app ID (or run `herald app create --save` first)", status: .usage)
        }
        return app
    }
}

extension Components.Schemas.App {
    var line: String { "\(id)  \(bundleId)  \(name)" }

    /// What the app's client keys may do.
    var clientRules: String {
        var rules = [
            "identity verification \(identityVerification ? "on" : "off")",
            "client tags \(clientTags.map { $0.isEmpty ? "none" : $0.joined(separator: ",") } ?? "any")",
            "client attributes \(clientAttributes.map { $0.isEmpty ? "none" : $0.joined(separator: ",") } ?? "any")",
        ]
        if legacyClientAccess { rules.append("legacy client access on (client keys may use registration ids)") }
        if aliasSignaturesV1 == true { rules.append("old-form alias signatures taken (not bound to a device)") }
        var text = "  client keys: " + rules.joined(separator: "; ")
        if let warning = legacyModeWarning { text += "\n  WARNING: " + warning }
        if let policy = deliveryPolicy {
            var parts: [String] = []
            if let quiet = policy.quietHours { parts.append("quiet hours \(quiet.start)–\(quiet.end)") }
            if let zone = policy.defaultTimeZone { parts.append("default time zone \(zone)") }
            if let cap = policy.frequencyCap {
                parts.append(
                    "at most \(cap.maxPushes) campaign\(cap.maxPushes == 1 ? "" : "s") in \(cap.windowHours) h")
            }
            text += "\n  campaigns: " + parts.joined(separator: "; ")
        }
        return text
    }
}

/// `on` or `off`.
enum Switch: String, ExpressibleByArgument, CaseIterable {
    case on, off
    var isOn: Bool { self == .on }
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
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let configuration = try ClientConfiguration.load()
        let created = try await APIConnection.admin(configuration).client
            .createApp(body: .json(.init(name: name, bundleId: bundleID))).created.body.json
        if save {
            try ClientConfiguration.save(
                ["app_id": created.app.id, "api_key": created.serverKey.key], to: configuration.file)
        }
        try output.print(created) { created in
            var lines = [
                "app \(created.app.id) (\(created.app.name), \(created.app.bundleId))",
                "  server key  \(created.serverKey.key)   ← your back-end's; shown this once",
                "  client key  \(created.clientKey.key)   ← for your app's SDK (its own device only)",
            ]
            if let secret = created.identitySecret {
                lines.append("  identity secret  \(secret)   ← your back-end signs aliases with it; shown this once")
            }
            lines.append(
                save
                    ? "  saved the app id and server key in \(configuration.file.path)"
                    : "  use it: export HERALD_API_KEY=\(created.serverKey.key)")
            return lines.joined(separator: "\n")
        }
    }
}

struct AppListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List the apps.")

    @OptionGroup var output: OutputOptions

    func run() async throws {
        let client = try APIConnection.admin(try ClientConfiguration.load()).client
        let apps = try await APIConnection.everyItem { cursor in
            let page = try await client.listApps(query: .init(cursor: cursor, limit: 100)).ok.body.json
            return (page.apps, page.nextCursor)
        }
        try output.print(apps) { $0.map(\.line).joined(separator: "\n") }
    }
}

struct AppGetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "get", abstract: "Show an app.")

    @OptionGroup var app: AppOption
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let configuration = try ClientConfiguration.load()
        let found = try await APIConnection.admin(configuration).client
            .getApp(path: .init(appId: try app.resolve(configuration))).ok.body.json
        try output.print(found) {
            "\($0.line)\n  created \(Output.time($0.createdAt)), updated \(Output.time($0.updatedAt))\n\($0.clientRules)"
        }
    }
}

struct AppUpdateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "update",
        abstract:
            "Rename an app, change its bundle id, the rules of its client keys, or its campaigns' quiet hours and cap.")

    @OptionGroup var app: AppOption
    @Option(help: "The new name.") var name: String?
    @Option(name: .customLong("bundle-id"), help: "The new bundle id.") var bundleID: String?
    @Option(
        name: .customLong("identity-verification"),
        help: "on: a client key binds an alias only with the back-end's signature of it.")
    var identityVerification: Switch?
    @Option(
        name: .customLong("legacy-client-access"),
        help: "off: hold an app created before the client key rules to them (docs/security.md).")
    var legacyClientAccess: Switch?
    @Option(
        name: .customLong("alias-signatures-v1"),
        help: "off: take only alias signatures bound to the device's token and an expiry (docs/security.md).")
    var aliasSignaturesV1: Switch?
    @Option(
        name: .customLong("client-tags"), help: "The only tags client keys may set, comma-separated (\"\" for none).")
    var clientTags: String?
    @Flag(name: .customLong("any-client-tags"), help: "Let client keys set any tag again.")
    var anyClientTags = false
    @Option(
        name: .customLong("client-attributes"),
        help: "The only custom attributes client keys may set, comma-separated (\"\" for none).")
    var clientAttributes: String?
    @Flag(name: .customLong("any-client-attributes"), help: "Let client keys set any custom attribute again.")
    var anyClientAttributes = false
    @Option(
        name: .customLong("quiet-hours"),
        help: "No campaign reaches a device between these local times, e.g. 22:00-08:00 (docs/delivery-policy.md).")
    var quietHours: String?
    @Option(name: .customLong("default-time-zone"), help: "The time zone of devices without one, e.g. Europe/Berlin.")
    var defaultTimeZone: String?
    @Option(help: "At most N campaigns a device in H hours, as N/H, e.g. 3/24.") var cap: String?
    @Flag(name: .customLong("no-delivery-policy"), help: "Remove the quiet hours and the cap.")
    var noDeliveryPolicy = false
    @OptionGroup var output: OutputOptions

    /// The policy flags replace the whole policy (the API's `delivery_policy`).
    var deliveryPolicy: Components.Schemas.AppUpdate.DeliveryPolicyPayload? {
        get throws {
            if noDeliveryPolicy { return .init(value1: .init()) }
            guard quietHours != nil || defaultTimeZone != nil || cap != nil else { return nil }
            var policy = Components.Schemas.DeliveryPolicy(defaultTimeZone: defaultTimeZone)
            if let quietHours {
                let times = quietHours.split(separator: "-").map(String.init)
                guard times.count == 2 else { throw ValidationError("--quiet-hours is START-END, e.g. 22:00-08:00") }
                policy.quietHours = .init(start: times[0], end: times[1])
            }
            if let cap {
                let numbers = cap.split(separator: "/").compactMap { Int($0) }
                guard numbers.count == 2 else { throw ValidationError("--cap is PUSHES/HOURS, e.g. 3/24") }
                policy.frequencyCap = .init(maxPushes: numbers[0], windowHours: numbers[1])
            }
            return .init(value1: policy)
        }
    }

    func validate() throws {
        if name == nil, bundleID == nil, identityVerification == nil, legacyClientAccess == nil,
            aliasSignaturesV1 == nil, clientTags == nil, !anyClientTags, clientAttributes == nil,
            !anyClientAttributes, try deliveryPolicy == nil
        {
            throw ValidationError(
                "give what to change: --name, --bundle-id, --identity-verification, --legacy-client-access, --alias-signatures-v1, --client-tags, --any-client-tags, --client-attributes, --any-client-attributes, --quiet-hours, --default-time-zone, --cap or --no-delivery-policy"
            )
        }
        if clientTags != nil, anyClientTags {
            throw ValidationError("give --client-tags or --any-client-tags, not both")
        }
        if clientAttributes != nil, anyClientAttributes {
            throw ValidationError("give --client-attributes or --any-client-attributes, not both")
        }
        if noDeliveryPolicy, quietHours != nil || defaultTimeZone != nil || cap != nil {
            throw ValidationError("give --no-delivery-policy or the policy's flags, not both")
        }
    }

    func run() async throws {
        let configuration = try ClientConfiguration.load()
        let tags = clientTags.map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
        let attributes = clientAttributes.map {
            $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        }
        let updated = try await APIConnection.admin(configuration).client.updateApp(
            path: .init(appId: try app.resolve(configuration)),
            body: .json(
                .init(
                    name: name, bundleId: bundleID, identityVerification: identityVerification?.isOn,
                    legacyClientAccess: legacyClientAccess?.isOn, aliasSignaturesV1: aliasSignaturesV1?.isOn,
                    clientTags: tags,
                    clientTagsUnrestricted: anyClientTags ? true : nil, clientAttributes: attributes,
                    clientAttributesUnrestricted: anyClientAttributes ? true : nil, deliveryPolicy: try deliveryPolicy))
        ).ok.body.json
        try output.print(updated) { "updated \($0.line)\n\($0.clientRules)" }
    }
}

struct AppDeleteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Delete an app with its keys, credentials, devices and pushes.")

    @OptionGroup var app: AppOption
    @Flag(help: "Yes, delete it (nothing asks again).") var yes = false

    func validate() throws {
        if !yes { throw ValidationError("deleting an app deletes its devices and pushes too: add --yes to go ahead") }
    }

    func run() async throws {
        let configuration = try ClientConfiguration.load()
        let id = try app.resolve(configuration)
        _ = try await APIConnection.admin(configuration).client.deleteApp(path: .init(appId: id)).noContent
        print("deleted app \(id)")
    }
}

// MARK: Keys

struct AppKeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "An app's API keys: list (the default), create, rotate, revoke.",
        subcommands: [
            AppKeysListCommand.self, AppKeysCreateCommand.self, AppKeysRotateCommand.self, AppKeysRevokeCommand.self,
        ],
        defaultSubcommand: AppKeysListCommand.self)
}

extension Components.Schemas.Key {
    var line: String {
        var text =
            "\(id)  \(kind.rawValue)  \(prefix)…  \(name.isEmpty ? "-" : name)  created \(Output.time(createdAt))"
        if let scopes { text += "  scopes \(scopes.map(\.rawValue).joined(separator: ","))" }
        if let lastUsedAt { text += "  last used \(Output.time(lastUsedAt))" }
        if let revokedAt { text += "  revoked \(Output.time(revokedAt))" }
        return text
    }
}

extension Components.Schemas.KeyCreated {
    var lines: String { "\(kind.rawValue) key \(id)\n  \(key)   ← shown this once; herald keeps only its hash" }
}

struct AppKeysListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List an app's keys (never the keys themselves).")

    @OptionGroup var app: AppOption
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let configuration = try ClientConfiguration.load()
        let keys = try await APIConnection.admin(configuration).client
            .listKeys(path: .init(appId: try app.resolve(configuration))).ok.body.json
        try output.print(keys) { $0.keys.map(\.line).joined(separator: "\n") }
    }
}

struct AppKeysCreateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "create", abstract: "Create a key (shown once).")

    @OptionGroup var app: AppOption
    @Option(
        help:
            "server (pushes, devices, statistics), client (the SDK's: its own device only) or admin (manages this app only)."
    )
    var kind: Components.Schemas.KeyKind = .server
    @Option(help: "A name to tell keys apart.") var name: String?
    @Option(
        help:
            "A server key's scopes, comma-separated, out of pushes:write, pushes:read, devices:write, devices:read, stats:read (default: all)."
    )
    var scopes: String?
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let configuration = try ClientConfiguration.load()
        let scopeList = try scopes.map { text in
            try text.split(separator: ",").map { name in
                guard let scope = Components.Schemas.KeyScope(rawValue: name.trimmingCharacters(in: .whitespaces))
                else {
                    throw CLIError(
                        "\(name) is not a scope: pushes:write, pushes:read, devices:write, devices:read, stats:read",
                        status: .usage)
                }
                return scope
            }
        }
        let created = try await APIConnection.admin(configuration).client.createKey(
            path: .init(appId: try app.resolve(configuration)),
            body: .json(.init(kind: kind, name: name, scopes: scopeList))
        ).created.body.json
        try output.print(created) { $0.lines }
    }
}

struct AppKeysRotateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rotate",
        abstract: "Replace a key: a new one now (shown once), the old one works for a grace period.")

    @OptionGroup var app: AppOption
    @Argument(help: "The key id.") var keyID: String
    @Option(name: .customLong("grace"), help: "Seconds the old key keeps working.") var graceSeconds: Int?
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let configuration = try ClientConfiguration.load()
        let created = try await APIConnection.admin(configuration).client.rotateKey(
            path: .init(appId: try app.resolve(configuration), keyId: keyID),
            body: .json(.init(graceSeconds: graceSeconds))
        ).created.body.json
        try output.print(created) { $0.lines }
    }
}

struct AppKeysRevokeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "revoke", abstract: "Revoke a key at once.")

    @OptionGroup var app: AppOption
    @Argument(help: "The key id.") var keyID: String

    func run() async throws {
        let configuration = try ClientConfiguration.load()
        _ = try await APIConnection.admin(configuration).client
            .revokeKey(path: .init(appId: try app.resolve(configuration), keyId: keyID)).noContent
        print("revoked key \(keyID)")
    }
}

// MARK: Identity secret and audit log

struct AppIdentitySecretCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "identity-secret",
        abstract:
            "Make a new identity secret (shown once): the key your back-end signs aliases with (HMAC-SHA256, docs/security.md)."
    )

    @OptionGroup var app: AppOption
    @Option(name: .customLong("grace"), help: "Seconds the old secret keeps verifying (default 0).")
    var graceSeconds: Int?
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let configuration = try ClientConfiguration.load()
        let secret = try await APIConnection.admin(configuration).client.rotateIdentitySecret(
            path: .init(appId: try app.resolve(configuration)), body: .json(.init(graceSeconds: graceSeconds))
        ).created.body.json
        try output.print(secret) { "identity secret  \($0.identitySecret)   ← shown this once" }
    }
}

extension Components.Schemas.AuditEvent {
    var line: String {
        var text = "\(id)  \(Output.time(occurredAt))  \(action)"
        if let target { text += " \(target)" }
        text += "  by \(keyId.map { "key \($0)" } ?? actor.rawValue)"
        if let sourceAddress { text += " from \(sourceAddress)" }
        if let requestId { text += "  request \(requestId)" }
        let details = self.details.additionalProperties.sorted { $0.key < $1.key }
        if !details.isEmpty { text += "  " + details.map { "\($0.key)=\($0.value)" }.joined(separator: " ") }
        return text
    }
}

struct AppAuditCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit", abstract: "The app's audit log, oldest first: who changed what, and every push action.")

    @OptionGroup var app: AppOption
    @Option(help: "Show entries after this entry id.") var after: Int64?
    @Option(help: "At most this many entries (default: all).") var limit: Int?
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let configuration = try ClientConfiguration.load()
        let client = try APIConnection.admin(configuration).client
        let appID = try app.resolve(configuration)
        var events: [Components.Schemas.AuditEvent] = []
        var cursor = after
        repeat {
            let page = try await client.listAuditEvents(
                path: .init(appId: appID), query: .init(cursor: cursor, limit: min(1000, limit ?? 1000))
            ).ok.body.json
            events += page.events
            cursor = page.nextCursor
        } while cursor != nil && events.count < (limit ?? .max)
        if let limit { events = Array(events.prefix(limit)) }
        try output.print(events) { $0.map(\.line).joined(separator: "\n") }
    }
}

// MARK: Credentials

struct AppCredentialsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "credentials",
        abstract: "An app's APNs credentials: set (the default), list, delete.",
        subcommands: [AppCredentialsSetCommand.self, AppCredentialsListCommand.self, AppCredentialsDeleteCommand.self],
        defaultSubcommand: AppCredentialsSetCommand.self)
}

extension Components.Schemas.Environment: ExpressibleByArgument {}
extension Components.Schemas.KeyKind: ExpressibleByArgument {}

extension Components.Schemas.Credential {
    var line: String {
        var text = "\(environment.rawValue)  \(kind.rawValue)"
        if let keyId { text += "  key \(keyId), team \(teamId ?? "?")" }
        if let certificateExpiresAt {
            text += "  certificate expires \(Output.time(certificateExpiresAt))"
            if certificateExpiresAt.timeIntervalSinceNow < 30 * 86_400 { text += "  ⚠ within 30 days: renew it" }
        }
        return text + "  updated \(Output.time(updatedAt))"
    }
}

struct AppCredentialsSetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Store an app's APNs credentials for one environment: a .p8 token key, or a certificate.",
        discussion: """
            Token key:    herald app credentials --p8 AuthKey_ABCDE12345.p8 --key-id ABCDE12345 --team-id TEAM123456
            Dev stack:    herald app credentials --dev-stack-key   (the key apns-sim of `herald dev up` trusts)
            Certificate:  herald app credentials --certificate cert.pem --private-key key.pem
            PKCS#12:      HERALD_P12_PASSPHRASE=… herald app credentials --pkcs12 push.p12
            The private key is sealed under herald-api's master key and never shown again.
            """)

    @OptionGroup var app: AppOption
    @Option(help: "sandbox or production.") var environment: Components.Schemas.Environment = .sandbox
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
    @OptionGroup var output: OutputOptions

    func validate() throws {
        let kinds = [p8, certificate, pkcs12].compactMap { $0 }.count + (devStackKey ? 1 : 0)
        guard kinds == 1 else {
            throw ValidationError("give exactly one of --p8, --certificate, --pkcs12 or --dev-stack-key")
        }
        if p8 != nil, keyID == nil || teamID == nil { throw ValidationError("--p8 needs --key-id and --team-id") }
    }

    func run() async throws {
        let configuration = try ClientConfiguration.load()
        let appID = try app.resolve(configuration)
        let body: Components.Schemas.CredentialInput
        if devStackKey {
            let key = try DevStack.load(from: DevDirectoryOption.parse([]).path).signingKey
            body = .init(
                kind: .token, keyId: key.keyID, teamId: key.teamID, privateKey: try Self.read(key.privateKeyFile))
        } else if let p8 {
            body = .init(kind: .token, keyId: keyID, teamId: teamID, privateKey: try Self.read(p8))
        } else if let certificate {
            // Without --private-key the certificate file is taken to hold the key too (one PEM file).
            body = .init(
                kind: .certificate, privateKey: try Self.read(privateKey ?? certificate),
                certificatePem: try Self.read(certificate))
        } else {
            let data: Data
            do {
                data = try Data(contentsOf: URL(fileURLWithPath: pkcs12 ?? ""))
            } catch {
                throw CLIError("cannot read \(pkcs12 ?? ""): \(error.localizedDescription)")
            }
            body = .init(
                kind: .certificate, pkcs12Base64: data.base64EncodedString(),
                passphrase: ProcessInfo.processInfo.environment["HERALD_P12_PASSPHRASE"] ?? "")
        }
        let stored = try await APIConnection.admin(configuration).client.putCredential(
            path: .init(appId: appID, environment: environment), body: .json(body)
        ).ok.body.json
        try output.print(stored) { "stored for app \(appID): \($0.line)" }
    }

    static func read(_ path: String) throws -> String {
        do {
            return try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw CLIError("cannot read \(path): \(error.localizedDescription)")
        }
    }
}

struct AppCredentialsListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "An app's APNs credentials per environment (never the private keys).")

    @OptionGroup var app: AppOption
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let configuration = try ClientConfiguration.load()
        let list = try await APIConnection.admin(configuration).client
            .listCredentials(path: .init(appId: try app.resolve(configuration))).ok.body.json
        try output.print(list) { list in
            list.credentials.isEmpty
                ? "no credentials: `herald app credentials --p8 …` stores one"
                : list.credentials.map(\.line).joined(separator: "\n")
        }
    }
}

struct AppCredentialsDeleteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Delete an app's APNs credentials for one environment.")

    @OptionGroup var app: AppOption
    @Option(help: "sandbox or production.") var environment: Components.Schemas.Environment

    func run() async throws {
        let configuration = try ClientConfiguration.load()
        let appID = try app.resolve(configuration)
        _ = try await APIConnection.admin(configuration).client
            .deleteCredential(path: .init(appId: appID, environment: environment)).noContent
        print("deleted the \(environment.rawValue) credentials of app \(appID)")
    }
}
