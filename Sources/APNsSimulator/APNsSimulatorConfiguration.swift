import Foundation
import NIOCore
import NIOSSL

/// Everything apns-sim starts with. Every field has a default; `apns-sim --help` and
/// `docs/apns-sim.md` describe them.
public struct APNsSimulatorConfiguration: Sendable {
    /// Address of the provider API (TLS, HTTP/2).
    public var host = "127.0.0.1"
    /// Port of the provider API; 0 picks a free one. Apple uses 443 and 2197.
    public var port = 2197
    /// Address of the admin endpoint (HTTP/1.1, JSON, no TLS).
    public var adminHost = "127.0.0.1"
    /// Port of the admin endpoint; 0 picks a free one, nil turns it off.
    public var adminPort: Int? = 2198
    /// The server certificate and key; nil generates a self-signed P-256 certificate for
    /// `localhost`, `127.0.0.1` and `::1` at start.
    public var identity: SimulatorIdentity?
    /// Certificate authorities whose client certificates are accepted for certificate-based
    /// authentication (mutual TLS); nil turns certificate authentication off.
    public var clientCertificateAuthorities: [NIOSSLCertificate]?
    /// SETTINGS_MAX_CONCURRENT_STREAMS once a connection has authenticated.
    public var maxConcurrentStreams: UInt32 = 1000
    /// SETTINGS_MAX_CONCURRENT_STREAMS until a connection's first request authenticates
    /// (Apple starts at 1).
    public var streamsBeforeAuthentication: UInt32 = 1
    /// A connection may switch to a new provider token at most this often (Apple: 20 minutes).
    public var providerTokenUpdateInterval: Duration = .seconds(20 * 60)
    /// A provider token whose `iat` is older than this is expired (Apple: one hour).
    public var providerTokenLifetimeSeconds: Int64 = 3600
    /// Token-signing keys the simulator trusts.
    public var keys: [ProviderKey] = []
    /// Devices the simulator knows.
    public var devices: [SimulatedDevice] = []
    /// Treat unknown well-formed tokens as deliverable (benchmarks) instead of BadDeviceToken.
    public var acceptAnyToken = false
    /// Faults injected from the start.
    public var faults = APNsFaults()
    /// What the simulator keeps of accepted notifications.
    public var recording = RecordingMode.full
    /// An NDJSON file every accepted notification is appended to (full recording only).
    public var recordFile: String?
    /// Event-loop threads serving connections.
    public var threads = System.coreCount

    public init() {}
}

/// A TLS certificate chain and private key.
public struct SimulatorIdentity: Sendable {
    public var certificateChain: [NIOSSLCertificate]
    public var privateKey: NIOSSLPrivateKey
    /// The leaf certificate in PEM, for clients to trust.
    public var certificatePEM: String

    public init(certificateChain: [NIOSSLCertificate], privateKey: NIOSSLPrivateKey, certificatePEM: String) {
        self.certificateChain = certificateChain
        self.privateKey = privateKey
        self.certificatePEM = certificatePEM
    }

    /// Loads a PEM certificate chain and private key.
    /// - Throws: ``APNsSimulatorError`` naming the file that could not be read or parsed.
    public static func load(certificateFile: String, privateKeyFile: String) throws -> SimulatorIdentity {
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMFile(certificateFile)
        } catch {
            throw APNsSimulatorError(
                "cannot read the certificate \(certificateFile): \(error); give a PEM certificate file")
        }
        guard !chain.isEmpty else {
            throw APNsSimulatorError("no certificate in \(certificateFile); give a PEM certificate file")
        }
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(file: privateKeyFile, format: .pem)
        } catch {
            throw APNsSimulatorError(
                "cannot read the private key \(privateKeyFile): \(error); give an unencrypted PEM key file")
        }
        let pem = (try? String(contentsOfFile: certificateFile, encoding: .utf8)) ?? ""
        return SimulatorIdentity(certificateChain: chain, privateKey: key, certificatePEM: pem)
    }
}
