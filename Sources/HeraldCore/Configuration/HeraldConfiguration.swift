import Configuration
import SystemPackage

/// Everything a Herald process reads at start.
///
/// Values come from the environment (`HERALD_` followed by the key in upper snake case, for
/// example `HERALD_KAFKA_BROKERS`), then from the JSON file named by `HERALD_CONFIG_FILE`
/// (keys as nested objects, for example `{"kafka": {"brokers": "..."}}`), then from the
/// defaults below, which suit a development machine. Every key is listed in
/// `docs/configuration.md`.
public struct HeraldConfiguration: Sendable {
    public var kafka: KafkaSettings
    public var postgres: PostgresSettings
    public var security: SecuritySettings
    public var sender: SenderSettings
    public var center: CenterSettings
    public var api: APISettings
    public var gateway: GatewaySettings
    /// `trace`, `debug`, `info`, `notice`, `warning`, `error` or `critical` (`HERALD_LOG_LEVEL`).
    public var logLevel: String
    /// `text` or `json` (`HERALD_LOG_FORMAT`; see ``LogFormat``).
    public var logFormat: String

    /// Reads the configuration.
    /// - Parameters:
    ///   - environment: the variables to read (the process environment by default).
    /// - Throws: when `HERALD_CONFIG_FILE` names a file that is missing or not JSON, or a secret's
    ///   `*_FILE` cannot be read.
    public static func load(environment: [String: String]? = nil) async throws -> HeraldConfiguration {
        try HeraldConfiguration(
            reader: try await makeReader(environment: environment),
            environment: environment ?? ProcessEnvironment.variables)
    }

    /// The reader behind ``load(environment:)``: environment first, then the file, then defaults.
    public static func makeReader(environment: [String: String]? = nil) async throws -> ConfigReader {
        let variables = environment ?? ProcessEnvironment.variables
        let environmentProvider = EnvironmentVariablesProvider(environmentVariables: variables)
            .prefixKeys(with: ["herald"])
        var providers: [any ConfigProvider] = [environmentProvider]
        if let path = variables["HERALD_CONFIG_FILE"], !path.isEmpty {
            providers.append(try await FileProvider<JSONSnapshot>(filePath: FilePath(path)))
        }
        return ConfigReader(providers: providers)
    }

    /// Reads the configuration from an already assembled reader; `environment` supplies the
    /// `HERALD_KAFKA_PROPERTY_*` variables, which no fixed key can name.
    /// - Throws: ``SettingError`` when a secret's file (`HERALD_MASTER_KEY_FILE`, …) cannot be read
    ///   or a setting has a value Herald cannot start with.
    public init(reader config: ConfigReader, environment: [String: String] = [:]) throws(SettingError) {
        kafka = KafkaSettings(
            brokers: config.string(forKey: "kafka.brokers", default: "127.0.0.1:9092"),
            clientID: config.string(forKey: "kafka.clientId", default: "herald"),
            sessionTimeout: config.milliseconds(forKey: "kafka.sessionTimeoutMs", default: 6_000, minimum: 1),
            heartbeatInterval: config.milliseconds(forKey: "kafka.heartbeatIntervalMs", default: 1_000, minimum: 1),
            fetchWaitMaximum: config.milliseconds(forKey: "kafka.fetchWaitMaxMs", default: 10),
            // librdkafka's range for queued.max.messages.kbytes.
            consumerQueueKilobytes: min(
                2_097_151, max(1, config.int(forKey: "kafka.consumerQueueKb", default: 16_384))),
            // Herald's records are batches already (a job batch, a batch's outcomes, a push), so
            // waiting to fill a produce request buys little and costs every hop its wait.
            linger: config.milliseconds(forKey: "kafka.lingerMs", default: 0),
            compression: config.string(forKey: "kafka.compression", default: "none"),
            debugContexts: config.string(forKey: "kafka.debug", default: ""),
            statisticsInterval: config.milliseconds(forKey: "kafka.statisticsIntervalMs", default: 5_000, minimum: 100),
            readyPollWithin: config.milliseconds(forKey: "kafka.readyPollWithinMs", default: 60_000, minimum: 1_000),
            security: try KafkaSecuritySettings(reader: config, environment: environment)
        )
        postgres = PostgresSettings(
            host: config.string(forKey: "postgres.host", default: "127.0.0.1"),
            port: config.int(forKey: "postgres.port", default: 54329),
            user: config.string(forKey: "postgres.user", default: "herald"),
            password: try Self.secret(config, "postgres.password", variable: "HERALD_POSTGRES_PASSWORD")
                ?? "herald-dev",
            database: config.string(forKey: "postgres.database", default: "herald"),
            maximumConnections: config.int(forKey: "postgres.maxConnections", default: 20),
            idleInTransactionTimeout: config.milliseconds(
                forKey: "postgres.idleInTransactionTimeoutMs", default: 60_000),
            tls: try PostgresTLSSettings(reader: config)
        )
        try postgres.refusePlaintextAcrossNetworks(
            allowed: config.bool(forKey: "postgres.allowPlaintext", default: false))
        security = SecuritySettings(
            masterKey: try Self.secret(config, "masterKey", variable: "HERALD_MASTER_KEY"),
            adminToken: try Self.secret(config, "adminToken", variable: "HERALD_ADMIN_TOKEN"),
            decryptOnlyMasterKeys: (try Self.secret(
                config, "masterKey.decryptOnly", variable: "HERALD_MASTER_KEY_DECRYPT_ONLY") ?? "")
                .split(separator: ",").map { String($0) }.filter { !$0.isEmpty }
        )
        sender = SenderSettings(reader: config)
        center = CenterSettings(reader: config)
        api = APISettings(reader: config)
        gateway = try GatewaySettings(reader: config)
        logLevel = config.string(forKey: "logLevel", default: "info")
        logFormat = config.string(forKey: "logFormat", default: "text")
    }
}

extension HeraldConfiguration {
    /// A secret setting: its value, or else the contents of the file its `*_FILE` variant names
    /// (a secret store's mount), without the trailing line break.
    /// - Throws: ``SettingError`` naming the file (never its contents) when it cannot be read.
    static func secret(_ config: ConfigReader, _ key: String, variable: String) throws(SettingError) -> String? {
        if let value = config.string(forKey: ConfigKey(key), isSecret: true) { return value }
        guard let path = config.string(forKey: ConfigKey(key + "File")) else { return nil }
        do {
            var text = try String(contentsOfFile: path, encoding: .utf8)
            while text.last?.isNewline == true { text.removeLast() }
            return text
        } catch {
            throw SettingError("cannot read \(variable)_FILE \(path): it is missing, unreadable or not UTF-8 text")
        }
    }
}

/// Where Kafka is and how Herald's clients talk to it. Plain settings: HeraldMessaging turns them
/// into the Kafka client's configurations (HeraldCore does not depend on Kafka).
public struct KafkaSettings: Sendable {
    /// Bootstrap brokers, `host:port` separated by commas (`HERALD_KAFKA_BROKERS`).
    public var brokers: String
    public var clientID: String
    /// The defaults for session, heartbeat and fetch wait suit the development broker; a real
    /// cluster is better served by 10000, 3000 and 100 ms.
    public var sessionTimeout: Duration
    public var heartbeatInterval: Duration
    public var fetchWaitMaximum: Duration
    /// What a consumer fetches ahead of its handler at most, in KiB (`HERALD_KAFKA_CONSUMER_QUEUE_KB`).
    public var consumerQueueKilobytes: Int
    /// How long a producer waits to fill a batch (`linger.ms`; 0: it sends what is queued at once,
    /// and what queues while a request is out goes in the next).
    public var linger: Duration
    public var compression: String
    /// librdkafka debug contexts, for example `cgrp,fetch` (`HERALD_KAFKA_DEBUG`); empty: none.
    public var debugContexts: String
    /// Authentication, encryption and passed-through librdkafka properties.
    public var security: KafkaSecuritySettings
    /// How often librdkafka reports its statistics (`HERALD_KAFKA_STATISTICS_INTERVAL_MS`): what
    /// `/readyz` judges the brokers by, and what the queue and round-trip metrics show.
    public var statisticsInterval: Duration
    /// A consumer that has not polled for this long is not ready (`HERALD_KAFKA_READY_POLL_WITHIN_MS`).
    public var readyPollWithin: Duration

    public init(
        brokers: String, clientID: String = "herald", sessionTimeout: Duration = .seconds(6),
        heartbeatInterval: Duration = .seconds(1), fetchWaitMaximum: Duration = .milliseconds(10),
        consumerQueueKilobytes: Int = 16_384, linger: Duration = .zero, compression: String = "none",
        debugContexts: String = "",
        statisticsInterval: Duration = .seconds(5), readyPollWithin: Duration = .seconds(60),
        security: KafkaSecuritySettings = KafkaSecuritySettings()
    ) {
        self.brokers = brokers
        self.clientID = clientID
        self.sessionTimeout = sessionTimeout
        self.heartbeatInterval = heartbeatInterval
        self.fetchWaitMaximum = fetchWaitMaximum
        self.consumerQueueKilobytes = consumerQueueKilobytes
        self.linger = linger
        self.compression = compression
        self.debugContexts = debugContexts
        self.security = security
        self.statisticsInterval = statisticsInterval
        self.readyPollWithin = readyPollWithin
    }
}

/// How to reach PostgreSQL.
public struct PostgresSettings: Sendable {
    public var host: String
    public var port: Int
    public var user: String
    public var password: String
    public var database: String
    public var maximumConnections: Int
    /// PostgreSQL ends a session that sits inside a transaction this long without a statement
    /// (`idle_in_transaction_session_timeout`), so a process stuck mid-transaction cannot hold
    /// its row locks — and with them the counting of outcomes — for ever. 0 turns it off.
    public var idleInTransactionTimeout: Duration
    /// PostgreSQL stops any statement of these connections that runs longer (`statement_timeout`);
    /// zero: no limit. Not a setting of its own: herald-api gives its pool the limit of
    /// `HERALD_API_STATEMENT_TIMEOUT_MS`, so a query whose request has been answered 503 does not
    /// run on in the database; migrations lift it for their own connection.
    public var statementTimeout: Duration = .zero
    /// TLS for every connection (`HERALD_POSTGRES_TLS_*`).
    public var tls: PostgresTLSSettings
    /// What PostgreSQL shows as the connections' `application_name`: the process (`herald-api`, …),
    /// set at its start.
    public var applicationName = "herald"

    public init(
        host: String, port: Int, user: String, password: String, database: String, maximumConnections: Int = 20,
        idleInTransactionTimeout: Duration = .seconds(60), tls: PostgresTLSSettings = PostgresTLSSettings()
    ) {
        self.host = host
        self.port = port
        self.user = user
        self.password = password
        self.database = database
        self.maximumConnections = maximumConnections
        self.idleInTransactionTimeout = idleInTransactionTimeout
        self.tls = tls
    }
}

/// Secrets. Never logged.
public struct SecuritySettings: Sendable {
    /// 32 bytes, base64 (`HERALD_MASTER_KEY`): encrypts APNs private keys at rest.
    public var masterKey: String?
    /// Bearer token that manages apps (`HERALD_ADMIN_TOKEN`).
    public var adminToken: String?
    /// More master keys, comma-separated, that open credentials but seal none
    /// (`HERALD_MASTER_KEY_DECRYPT_ONLY`): for rotating the master key.
    public var decryptOnlyMasterKeys: [String]

    public init(masterKey: String? = nil, adminToken: String? = nil, decryptOnlyMasterKeys: [String] = []) {
        self.masterKey = masterKey
        self.adminToken = adminToken
        self.decryptOnlyMasterKeys = decryptOnlyMasterKeys
    }

    /// The cipher of the configured master keys, or nil without `HERALD_MASTER_KEY`.
    /// - Throws: `CredentialCipher.InvalidMasterKey` for a key that is not 32 bytes of base64.
    public func cipher() throws -> CredentialCipher? {
        try masterKey.map { try CredentialCipher(masterKeyBase64: $0, decryptOnlyBase64: decryptOnlyMasterKeys) }
    }

    /// The fewest characters an admin token may have: 32 random bytes written in base64 (43 or
    /// 44 characters). A shorter one can be guessed; herald-api refuses to start with it.
    public static let minimumAdminTokenLength = 43

    /// Checks the admin token, if one is set.
    /// - Throws: a message that says how to make a good one.
    public func checkAdminToken() throws(SettingError) {
        guard let adminToken, !adminToken.isEmpty else { return }
        guard adminToken.count >= Self.minimumAdminTokenLength else {
            throw SettingError(
                """
                HERALD_ADMIN_TOKEN is \(adminToken.count) characters; it must be at least \(Self.minimumAdminTokenLength) \
                (32 random bytes, e.g. `openssl rand -base64 32`)
                """)
        }
    }
}

/// A setting Herald cannot start with; the message names it and says how to fix it.
extension PostgresSettings {
    /// Refuses TLS mode `disable` for a host that is not on this machine (loopback, or a Unix
    /// socket's directory) unless `allowed` (`HERALD_POSTGRES_ALLOW_PLAINTEXT=true`): the
    /// password and every device token would cross the network in the clear.
    func refusePlaintextAcrossNetworks(allowed: Bool) throws(SettingError) {
        guard tls.mode == .disable, !allowed, !host.hasPrefix("/"), !NetworkAddress.isLoopback(host) else { return }
        throw SettingError(
            "HERALD_POSTGRES_HOST is \(host), not this machine, and TLS to PostgreSQL is off: set HERALD_POSTGRES_TLS_MODE=verify-full (with HERALD_POSTGRES_TLS_CA_FILE), or, on a network you trust, HERALD_POSTGRES_ALLOW_PLAINTEXT=true"
        )
    }
}

public struct SettingError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
