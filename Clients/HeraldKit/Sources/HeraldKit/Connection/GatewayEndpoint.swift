import Foundation

/// Where herald-gateway listens and how its certificate is checked.
public struct GatewayEndpoint: Sendable, Equatable {
    public var host: String
    public var port: Int
    /// PEM certificates to trust instead of the system's (a development gateway's own CA);
    /// nil trusts the system's roots, as an app in the App Store does.
    public var trustedCertificatesPEM: String?
    /// The name the certificate must carry; `host` when nil.
    public var serverName: String?

    public init(host: String, port: Int = 7443, trustedCertificatesPEM: String? = nil, serverName: String? = nil) {
        self.host = host
        self.port = port
        self.trustedCertificatesPEM = trustedCertificatesPEM
        self.serverName = serverName
    }
}
