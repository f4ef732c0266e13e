import Configuration

/// How Herald's PostgreSQL connections use TLS: the postgres-nio pools and the libpq `COPY`
/// stream read the same settings, with libpq's meaning of each mode.
public struct PostgresTLSSettings: Sendable, Equatable {
    /// libpq's `sslmode` values that Herald supports (`HERALD_POSTGRES_TLS_MODE`).
    public enum Mode: String, Sendable, CaseIterable {
        /// Plain TCP.
        case disable
        /// TLS, the server's certificate not checked, unless a CA file is given: then its chain
        /// is checked as in `verify-ca` (libpq does the same with a root certificate).
        case require
        /// TLS, the server's certificate must chain to the CA file (or the system's roots).
        case verifyCA = "verify-ca"
        /// `verify-ca`, and the certificate must name the host Herald connects to.
        case verifyFull = "verify-full"
    }

    public var mode: Mode
    /// PEM certificates the server's chain must end in (`HERALD_POSTGRES_TLS_CA_FILE`); without
    /// it, `verify-ca` and `verify-full` use the system's trust roots.
    public var caFile: String?
    /// A PEM client certificate (`HERALD_POSTGRES_TLS_CERTIFICATE_FILE`), for servers that
    /// authenticate clients by certificate; it needs ``keyFile``.
    public var certificateFile: String?
    /// The client certificate's unencrypted PEM private key (`HERALD_POSTGRES_TLS_KEY_FILE`); libpq
    /// requires its permissions to be 0600 or stricter (0640 if owned by root).
    public var keyFile: String?

    /// Where Debian (and the container image) keep the system's trust roots as one file: libpq 15
    /// has no "use the system roots" value, so the `COPY` stream is given this file.
    public static let systemTrustRootsFile = "/etc/ssl/certs/ca-certificates.crt"

    public init(mode: Mode = .disable, caFile: String? = nil, certificateFile: String? = nil, keyFile: String? = nil) {
        self.mode = mode
        self.caFile = caFile
        self.certificateFile = certificateFile
        self.keyFile = keyFile
    }

    /// Reads `postgres.tls*`.
    /// - Throws: ``SettingError`` for a mode Herald does not know, a certificate without its key
    ///   (or a key without its certificate), or a file that cannot be read.
    init(reader config: ConfigReader) throws(SettingError) {
        let mode = try config.choice(forKey: "postgres.tlsMode", variable: "HERALD_POSTGRES_TLS_MODE", as: Mode.self)
        self.init(
            mode: mode ?? .disable,
            caFile: try config.readableFile(forKey: "postgres.tlsCaFile", variable: "HERALD_POSTGRES_TLS_CA_FILE"),
            certificateFile: try config.readableFile(
                forKey: "postgres.tlsCertificateFile", variable: "HERALD_POSTGRES_TLS_CERTIFICATE_FILE"),
            keyFile: try config.readableFile(forKey: "postgres.tlsKeyFile", variable: "HERALD_POSTGRES_TLS_KEY_FILE"))
        guard (certificateFile == nil) == (keyFile == nil) else {
            throw SettingError(
                "HERALD_POSTGRES_TLS_CERTIFICATE_FILE and HERALD_POSTGRES_TLS_KEY_FILE go together: set both or neither"
            )
        }
    }

    /// libpq's connection parameters for these settings (`sslmode`, `sslrootcert`, `sslcert`,
    /// `sslkey`).
    public var libpqParameters: [(String, String)] {
        var parameters = [("sslmode", mode.rawValue)]
        switch mode {
        case .disable: return parameters
        case .require:
            if let caFile { parameters.append(("sslrootcert", caFile)) }
        case .verifyCA, .verifyFull:
            parameters.append(("sslrootcert", caFile ?? Self.systemTrustRootsFile))
        }
        if let certificateFile, let keyFile {
            parameters += [("sslcert", certificateFile), ("sslkey", keyFile)]
        }
        return parameters
    }
}
