import Configuration
import Foundation

/// How Herald's Kafka clients authenticate and encrypt: librdkafka's `security.protocol`, SASL and
/// SSL properties, plus any other librdkafka property passed through unchanged. Plain settings:
/// HeraldMessaging hands ``librdkafkaProperties`` to every producer and consumer.
public struct KafkaSecuritySettings: Sendable, Equatable {
    /// `security.protocol` (`HERALD_KAFKA_SECURITY_PROTOCOL`).
    public enum SecurityProtocol: String, Sendable, CaseIterable {
        case plaintext
        case ssl
        case saslPlaintext = "sasl_plaintext"
        case saslSSL = "sasl_ssl"

        var usesSASL: Bool { self == .saslPlaintext || self == .saslSSL }
        var usesTLS: Bool { self == .ssl || self == .saslSSL }
    }

    /// `sasl.mechanism` (`HERALD_KAFKA_SASL_MECHANISM`).
    public enum SASLMechanism: String, Sendable, CaseIterable {
        case plain = "PLAIN"
        case scramSHA256 = "SCRAM-SHA-256"
        case scramSHA512 = "SCRAM-SHA-512"
    }

    public var securityProtocol: SecurityProtocol
    public var saslMechanism: SASLMechanism?
    public var saslUsername: String?
    /// Never logged (`HERALD_KAFKA_SASL_PASSWORD`, or a file named by `_FILE`).
    public var saslPassword: String?
    /// PEM CA certificates the brokers' chains must end in (`HERALD_KAFKA_SSL_CA_FILE`); without
    /// it librdkafka uses the system's trust roots.
    public var caFile: String?
    /// A PEM client certificate and its key, for brokers that authenticate clients by certificate
    /// (`HERALD_KAFKA_SSL_CERTIFICATE_FILE`, `HERALD_KAFKA_SSL_KEY_FILE`).
    public var certificateFile: String?
    public var keyFile: String?
    /// Any other librdkafka property, passed through as given: `HERALD_KAFKA_PROPERTIES` (a JSON
    /// object of strings) and `HERALD_KAFKA_PROPERTY_<NAME>` variables (the name lower-cased,
    /// `_` turned into `.`), which win over the JSON object. They are applied last, over
    /// Herald's own values.
    public var properties: [String: String]

    public init(
        securityProtocol: SecurityProtocol = .plaintext, saslMechanism: SASLMechanism? = nil,
        saslUsername: String? = nil, saslPassword: String? = nil, caFile: String? = nil,
        certificateFile: String? = nil, keyFile: String? = nil, properties: [String: String] = [:]
    ) {
        self.securityProtocol = securityProtocol
        self.saslMechanism = saslMechanism
        self.saslUsername = saslUsername
        self.saslPassword = saslPassword
        self.caFile = caFile
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        self.properties = properties
    }

    /// The prefix of the variables that pass one librdkafka property each.
    public static let propertyVariablePrefix = "HERALD_KAFKA_PROPERTY_"

    /// Reads `kafka.security*`, `kafka.sasl*`, `kafka.ssl*` and `kafka.properties` from `config`, and
    /// the `HERALD_KAFKA_PROPERTY_*` variables from `environment`.
    /// - Throws: ``SettingError`` for a protocol or mechanism librdkafka does not offer, SASL
    ///   without a mechanism, user or password, a file that cannot be read, or properties that
    ///   are not a JSON object of strings.
    init(reader config: ConfigReader, environment: [String: String]) throws(SettingError) {
        let securityProtocol =
            try config.choice(
                forKey: "kafka.securityProtocol", variable: "HERALD_KAFKA_SECURITY_PROTOCOL", as: SecurityProtocol.self)
            ?? .plaintext
        let mechanism = try config.choice(
            forKey: "kafka.saslMechanism", variable: "HERALD_KAFKA_SASL_MECHANISM", as: SASLMechanism.self)
        self.init(
            securityProtocol: securityProtocol, saslMechanism: mechanism,
            saslUsername: config.string(forKey: "kafka.saslUsername"),
            saslPassword: try HeraldConfiguration.secret(
                config, "kafka.saslPassword", variable: "HERALD_KAFKA_SASL_PASSWORD"),
            caFile: try config.readableFile(forKey: "kafka.sslCaFile", variable: "HERALD_KAFKA_SSL_CA_FILE"),
            certificateFile: try config.readableFile(
                forKey: "kafka.sslCertificateFile", variable: "HERALD_KAFKA_SSL_CERTIFICATE_FILE"),
            keyFile: try config.readableFile(forKey: "kafka.sslKeyFile", variable: "HERALD_KAFKA_SSL_KEY_FILE"),
            properties: try Self.passedThrough(config: config, environment: environment))
        if securityProtocol.usesSASL {
            guard saslMechanism != nil, saslUsername?.isEmpty == false, saslPassword?.isEmpty == false else {
                throw SettingError(
                    """
                    HERALD_KAFKA_SECURITY_PROTOCOL \(securityProtocol.rawValue) needs HERALD_KAFKA_SASL_MECHANISM, \
                    HERALD_KAFKA_SASL_USERNAME and HERALD_KAFKA_SASL_PASSWORD (or _PASSWORD_FILE)
                    """)
            }
        }
        guard (certificateFile == nil) == (keyFile == nil) else {
            throw SettingError(
                "HERALD_KAFKA_SSL_CERTIFICATE_FILE and HERALD_KAFKA_SSL_KEY_FILE go together: set both or neither")
        }
    }

    static func passedThrough(config: ConfigReader, environment: [String: String]) throws(SettingError)
        -> [String: String]
    {
        var properties: [String: String] = [:]
        if let json = config.string(forKey: "kafka.properties", isSecret: true), !json.isEmpty {
            guard let object = try? JSONDecoder().decode([String: PropertyValue].self, from: Data(json.utf8)) else {
                throw SettingError(
                    #"HERALD_KAFKA_PROPERTIES is not a JSON object of strings, numbers or booleans, e.g. {"socket.keepalive.enable": "true"}"#
                )
            }
            for (key, value) in object { properties[key] = value.text }
        }
        for (variable, value) in environment where variable.hasPrefix(propertyVariablePrefix) {
            let name = variable.dropFirst(propertyVariablePrefix.count).lowercased()
                .replacingOccurrences(of: "_", with: ".")
            guard !name.isEmpty else { continue }
            properties[name] = value
        }
        if let fixed = properties.keys.sorted().first(where: { fixedProperties.contains($0) }) {
            throw SettingError(
                """
                the librdkafka property \(fixed) cannot be passed through (HERALD_KAFKA_PROPERTIES or \
                \(propertyVariablePrefix)*): Herald fixes it, because its delivery guarantees rest on it \
                (docs/configuration.md)
                """)
        }
        return properties
    }

    /// Properties Herald sets itself and that no passed-through value may change: the delivery
    /// guarantees rest on them, or they have a setting of their own (`HERALD_KAFKA_BROKERS`).
    public static let fixedProperties: Set<String> = [
        "bootstrap.servers", "metadata.broker.list", "enable.idempotence", "acks", "request.required.acks",
        "enable.auto.offset.store", "enable.auto.commit", "partition.assignment.strategy", "group.id",
    ]

    /// One value of `HERALD_KAFKA_PROPERTIES`, as librdkafka reads it: text.
    private struct PropertyValue: Decodable {
        var text: String

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let text = try? container.decode(String.self) {
                self.text = text
            } else if let flag = try? container.decode(Bool.self) {
                self.text = flag ? "true" : "false"
            } else if let whole = try? container.decode(Int.self) {
                self.text = String(whole)
            } else {
                self.text = String(try container.decode(Double.self))
            }
        }
    }

    /// The librdkafka properties these settings stand for; passed-through properties last.
    public var librdkafkaProperties: [String: String] {
        var result = ["security.protocol": securityProtocol.rawValue]
        if securityProtocol.usesSASL {
            if let saslMechanism { result["sasl.mechanism"] = saslMechanism.rawValue }
            if let saslUsername { result["sasl.username"] = saslUsername }
            if let saslPassword { result["sasl.password"] = saslPassword }
        }
        if securityProtocol.usesTLS {
            if let caFile { result["ssl.ca.location"] = caFile }
            if let certificateFile, let keyFile {
                result["ssl.certificate.location"] = certificateFile
                result["ssl.key.location"] = keyFile
            }
        }
        result.merge(properties) { _, passed in passed }
        return result
    }
}
