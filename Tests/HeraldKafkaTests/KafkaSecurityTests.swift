import Foundation
import HeraldCore
import HeraldMessaging
import Logging
import ServiceLifecycle
import Testing

@testable import HeraldKafka

extension KafkaTests {
    /// Kafka security settings and passed-through librdkafka properties. The development broker
    /// (librdkafka 2.0's mock cluster) speaks plaintext only, so plaintext is exercised against
    /// it end to end; for SSL and SASL the test reads back from the client's handle what
    /// librdkafka was configured with (no handshake with a TLS or SASL broker runs here).
    @Suite struct Security {
        let logger = Logger(label: "test.kafka.security")
        static let tls = ".local/postgres/tls"

        func configuration(_ variables: [String: String]) async throws -> HeraldConfiguration {
            try await HeraldConfiguration.load(
                environment: ProcessInfo.processInfo.environment.merging(variables) { $1 })
        }

        @Test("plaintext with passed-through properties: the records go round, and the handle holds the properties")
        func plaintextWithPassthrough() async throws {
            let settings = try await configuration([
                "HERALD_KAFKA_SECURITY_PROTOCOL": "PLAINTEXT",
                "HERALD_KAFKA_PROPERTY_SOCKET_KEEPALIVE_ENABLE": "true",
                "HERALD_KAFKA_PROPERTIES":
                    #"{"client.rack": "rack-a", "socket.keepalive.enable": false, "metadata.max.age.ms": 60000}"#,
            ]).kafka
            let topic = "herald.test.security.\(UUID().uuidString.prefix(8))"
            let producer = try KafkaProducer(
                configuration: settings.producerConfiguration(clientID: "security"), logger: logger)
            try await producer.send(KafkaProducerMessage(topic: topic, value: Array("setup".utf8)))
            let consumer = try KafkaConsumer(
                configuration: settings.consumerConfiguration(
                    groupID: "security-\(UUID())", topics: [topic], clientID: "security"),
                logger: logger)
            // A variable wins over the JSON object; the object's number and the rack get through.
            for client in [
                producer.configuredValues([
                    "socket.keepalive.enable", "client.rack", "metadata.max.age.ms", "security.protocol",
                ]),
                consumer.configuredValues([
                    "socket.keepalive.enable", "client.rack", "metadata.max.age.ms", "security.protocol",
                ]),
            ] {
                #expect(client["socket.keepalive.enable"] == "true")
                #expect(client["client.rack"] == "rack-a")
                #expect(client["metadata.max.age.ms"] == "60000")
                #expect(client["security.protocol"] == "plaintext")
            }
            let work = KafkaTests.ServiceLifecycle.SendThenConsume(
                producer: producer, consumer: consumer, topic: topic, count: 20)
            try await ServiceGroup(
                configuration: .init(
                    services: [
                        .init(service: producer), .init(service: consumer),
                        .init(service: work, successTerminationBehavior: .gracefullyShutdownGroup),
                    ],
                    logger: logger)
            ).run()
            #expect(work.consumed.withLock { $0.filter { $0.hasPrefix("first:") }.count } == 20)
        }

        @Test(
            "SASL_SSL with SCRAM-SHA-512, a CA and a client certificate reach librdkafka; the password is never read back"
        )
        func saslSSLReachesLibrdkafka() async throws {
            let passwordFile = FileManager.default.temporaryDirectory.appendingPathComponent("kafka-password-\(UUID())")
            try "scram-secret-for-test\n".write(to: passwordFile, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(at: passwordFile) }
            let settings = try await configuration([
                "HERALD_KAFKA_BROKERS": "127.0.0.1:1",
                "HERALD_KAFKA_SECURITY_PROTOCOL": "sasl_ssl", "HERALD_KAFKA_SASL_MECHANISM": "scram-sha-512",
                "HERALD_KAFKA_SASL_USERNAME": "herald", "HERALD_KAFKA_SASL_PASSWORD_FILE": passwordFile.path,
                "HERALD_KAFKA_SSL_CA_FILE": "\(Self.tls)/ca.crt",
                "HERALD_KAFKA_SSL_CERTIFICATE_FILE": "\(Self.tls)/client.crt",
                "HERALD_KAFKA_SSL_KEY_FILE": "\(Self.tls)/client.key",
            ]).kafka
            #expect(settings.security.saslPassword == "scram-secret-for-test")
            let producer = try KafkaProducer(
                configuration: settings.producerConfiguration(clientID: "security-read-back"), logger: logger)
            defer { Task { [producer] in await producer.shutdown() } }
            let values = producer.configuredValues([
                "security.protocol", "sasl.mechanisms", "sasl.username", "sasl.password", "ssl.ca.location",
                "ssl.certificate.location", "ssl.key.location",
            ])
            #expect(values["security.protocol"] == "sasl_ssl")
            #expect(values["sasl.mechanisms"] == "SCRAM-SHA-512")
            #expect(values["sasl.username"] == "herald")
            #expect(values["ssl.ca.location"] == "\(Self.tls)/ca.crt")
            #expect(values["ssl.certificate.location"] == "\(Self.tls)/client.crt")
            #expect(values["ssl.key.location"] == "\(Self.tls)/client.key")
            #expect(values["sasl.password"] == nil)
            #expect(producer.securitySummary.contains("sasl_ssl, SCRAM-SHA-512 as herald"))
        }

        @Test(
            "a property librdkafka refuses stops client creation with librdkafka's own words; secrets are not repeated")
        func refusedProperty() async throws {
            for (variable, value, words) in [
                (
                    "HERALD_KAFKA_PROPERTY_SOCKET_KEEPALIVE_ENABLE", "maybe",
                    "Expected bool value for \"socket.keepalive.enable\": true or false"
                ),
                ("HERALD_KAFKA_PROPERTY_NO_SUCH_THING", "1", "No such configuration property: \"no.such.thing\""),
            ] {
                let settings = try await configuration([variable: value]).kafka
                let error = #expect(throws: KafkaError.self) {
                    try KafkaProducer(
                        configuration: settings.producerConfiguration(clientID: "refused"), logger: logger)
                }
                #expect(error?.kind == .configuration)
                #expect(error?.message.contains(words) == true, "\(error.map { "\($0)" } ?? "")")
            }
            #expect(KafkaClientConfiguration.isSensitive("sasl.password"))
            #expect(KafkaClientConfiguration.isSensitive("ssl.key.pem"))
            #expect(!KafkaClientConfiguration.isSensitive("ssl.ca.location"))
        }

        @Test("settings Herald cannot start with are refused when read")
        func refusedSettings() async throws {
            await #expect(throws: SettingError.self) {
                _ = try await configuration(["HERALD_KAFKA_SECURITY_PROTOCOL": "tls"])
            }
            await #expect(throws: SettingError.self) {
                _ = try await configuration([
                    "HERALD_KAFKA_SECURITY_PROTOCOL": "sasl_ssl", "HERALD_KAFKA_SASL_MECHANISM": "PLAIN",
                ])
            }
            await #expect(throws: SettingError.self) {
                _ = try await configuration(["HERALD_KAFKA_SASL_MECHANISM": "GSSAPI"])
            }
            await #expect(throws: SettingError.self) {
                _ = try await configuration(["HERALD_KAFKA_PROPERTIES": "[1, 2]"])
            }
            // The delivery guarantees are not for passing through.
            await #expect(throws: SettingError.self) {
                _ = try await configuration(["HERALD_KAFKA_PROPERTY_ENABLE_AUTO_OFFSET_STORE": "true"])
            }
            await #expect(throws: SettingError.self) {
                _ = try await configuration(["HERALD_KAFKA_PROPERTIES": #"{"acks": "1"}"#])
            }
            await #expect(throws: SettingError.self) {
                _ = try await configuration(["HERALD_KAFKA_SSL_CA_FILE": "/nonexistent/ca.pem"])
            }
        }
    }
}
