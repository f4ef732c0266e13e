import HeraldKafka

extension KafkaProducer {
    /// How this producer reaches the brokers, read back from librdkafka (what the client really
    /// runs with), for a process's start line: `plaintext`, or for example
    /// `sasl_ssl, SCRAM-SHA-512 as herald, CA /etc/herald/kafka-ca.pem`. Never a secret.
    public var securitySummary: String {
        let values = configuredValues([
            "security.protocol", "sasl.mechanisms", "sasl.username", "ssl.ca.location", "ssl.certificate.location",
        ])
        let securityProtocol = values["security.protocol"] ?? "unknown"
        var parts = [securityProtocol]
        if securityProtocol.hasPrefix("sasl") {
            parts.append("\(values["sasl.mechanisms"] ?? "?") as \(values["sasl.username"] ?? "?")")
        }
        if securityProtocol.hasSuffix("ssl") {
            let ca = values["ssl.ca.location"] ?? ""
            parts.append(ca.isEmpty ? "CA: system roots" : "CA \(ca)")
            if let certificate = values["ssl.certificate.location"], !certificate.isEmpty {
                parts.append("client certificate \(certificate)")
            }
        }
        return parts.joined(separator: ", ")
    }
}
