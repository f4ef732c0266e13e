import NIOCore
import NIOSSL

/// The one TLS context every connection of a gateway shares (`../shared/GATEWAY.md`: a context
/// per connection would hold its own copies of the certificate and settings).
enum GatewayTLS {
    /// How long a connection the server closes waits for the client's TLS close_notify before
    /// its socket closes (swift-nio-ssl's default is 5 s; a client that reads nothing never sends one).
    static let shutdownTimeout: TimeAmount = .seconds(1)

    /// TLS 1.2 and 1.3 (BoringSSL prefers 1.3), the chain and key from PEM files.
    /// - Throws: when a file holds no certificate or no key, naming the setting.
    static func context(certificateFile: String, keyFile: String) throws -> NIOSSLContext {
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMFile(certificateFile)
        } catch {
            throw GatewayStartError(
                "HERALD_GATEWAY_TLS_CERTIFICATE_FILE \(certificateFile) holds no PEM certificate: \(error)")
        }
        guard !chain.isEmpty else {
            throw GatewayStartError("HERALD_GATEWAY_TLS_CERTIFICATE_FILE \(certificateFile) holds no PEM certificate")
        }
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(file: keyFile, format: .pem)
        } catch {
            throw GatewayStartError("HERALD_GATEWAY_TLS_KEY_FILE \(keyFile) holds no PEM private key: \(error)")
        }
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        configuration.minimumTLSVersion = .tlsv12
        configuration.shutdownTimeout = shutdownTimeout
        do {
            return try NIOSSLContext(configuration: configuration)
        } catch {
            throw GatewayStartError(
                "the TLS certificate (HERALD_GATEWAY_TLS_CERTIFICATE_FILE) and key (HERALD_GATEWAY_TLS_KEY_FILE) do not make a TLS context: \(error)"
            )
        }
    }
}

/// Why herald-gateway cannot start, in a sentence that names the setting to fix.
public struct GatewayStartError: Error, CustomStringConvertible {
    public let description: String

    init(_ description: String) { self.description = description }
}
