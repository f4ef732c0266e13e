import HeraldAPNsVocabulary
import NIOSSL

/// Where notifications go: Apple's production or sandbox servers, or another host (apns-sim).
public struct APNsEndpoint: Sendable {
    public var host: String
    public var port: Int
    /// Certificates trusted besides the system's roots (apns-sim's self-signed one).
    public var trustedCertificates: [NIOSSLCertificate]

    public init(host: String, port: Int, trustedCertificates: [NIOSSLCertificate] = []) {
        self.host = host
        self.port = port
        self.trustedCertificates = trustedCertificates
    }

    /// Apple's server for `environment`: api.push.apple.com or api.sandbox.push.apple.com, port 443.
    public static func apple(_ environment: APNsEnvironment) -> APNsEndpoint {
        APNsEndpoint(host: environment.appleHost, port: APNsEnvironment.applePort)
    }

    /// api.push.apple.com:443
    public static let production = apple(.production)
    /// api.sandbox.push.apple.com:443
    public static let sandbox = apple(.sandbox)
}

/// How a provider proves who it is to APNs.
public enum APNsCredential: Sendable {
    /// Token-based: an ES256 JWT per connection, signed with a `.p8` key.
    case token(APNsSigningKey)
    /// Certificate-based: a client certificate over mutual TLS.
    case certificate(chain: [NIOSSLCertificate], privateKey: NIOSSLPrivateKey)

    /// A certificate credential from PEM text (certificate chain and unencrypted key).
    public static func certificate(pemCertificate: String, pemPrivateKey: String) throws(APNsCredentialError)
        -> APNsCredential
    {
        do {
            let chain = try NIOSSLCertificate.fromPEMBytes(Array(pemCertificate.utf8))
            let key = try NIOSSLPrivateKey(bytes: Array(pemPrivateKey.utf8), format: .pem)
            guard !chain.isEmpty else { throw APNsCredentialError("no certificate in the PEM text") }
            return .certificate(chain: chain, privateKey: key)
        } catch let error as APNsCredentialError {
            throw error
        } catch {
            throw APNsCredentialError("the certificate or its key is not valid PEM: \(error)")
        }
    }

    /// A certificate credential from a PKCS#12 (.p12) file's bytes, as Keychain exports it.
    public static func certificate(pkcs12: [UInt8], passphrase: String) throws(APNsCredentialError) -> APNsCredential {
        do {
            let bundle = try NIOSSLPKCS12Bundle(buffer: pkcs12, passphrase: Array(passphrase.utf8))
            return .certificate(chain: bundle.certificateChain, privateKey: bundle.privateKey)
        } catch {
            throw APNsCredentialError("cannot open the .p12 file (wrong passphrase or not PKCS#12): \(error)")
        }
    }
}
