import HeraldCore
import NIOSSL
import PostgresNIO

extension HeraldDatabase {
    /// The TLS configuration for `settings`, with libpq's meaning of each mode (see
    /// ``PostgresTLSSettings/Mode``); nil for `disable`.
    /// - Throws: ``SettingError`` naming the file when a CA, certificate or key file is not PEM.
    static func tlsConfiguration(_ settings: PostgresTLSSettings) throws(SettingError) -> TLSConfiguration? {
        guard settings.mode != .disable else { return nil }
        var configuration = TLSConfiguration.makeClientConfiguration()
        switch settings.mode {
        case .disable: break
        case .require: configuration.certificateVerification = settings.caFile == nil ? .none : .noHostnameVerification
        case .verifyCA: configuration.certificateVerification = .noHostnameVerification
        case .verifyFull: configuration.certificateVerification = .fullVerification
        }
        do {
            if let caFile = settings.caFile {
                guard (try? NIOSSLCertificate.fromPEMFile(caFile))?.isEmpty == false else {
                    throw SettingError("HERALD_POSTGRES_TLS_CA_FILE \(caFile) holds no PEM certificate")
                }
                configuration.trustRoots = .file(caFile)
            }
            if let certificateFile = settings.certificateFile, let keyFile = settings.keyFile {
                guard let chain = try? NIOSSLCertificate.fromPEMFile(certificateFile), !chain.isEmpty else {
                    throw SettingError(
                        "HERALD_POSTGRES_TLS_CERTIFICATE_FILE \(certificateFile) holds no PEM certificate")
                }
                guard let key = try? NIOSSLPrivateKey(file: keyFile, format: .pem) else {
                    throw SettingError(
                        "HERALD_POSTGRES_TLS_KEY_FILE \(keyFile) holds no unencrypted PEM private key")
                }
                configuration.certificateChain = chain.map { .certificate($0) }
                configuration.privateKey = .privateKey(key)
            }
            return configuration
        } catch let error as SettingError {
            throw error
        } catch {
            throw SettingError("cannot use the PostgreSQL TLS settings (HERALD_POSTGRES_TLS_*): \(error)")
        }
    }

    /// One connection's TLS for `settings`.
    /// - Throws: ``SettingError`` as ``tlsConfiguration(_:)`` does, or when no TLS context can be made.
    static func connectionTLS(_ settings: PostgresTLSSettings) throws(SettingError)
        -> PostgresConnection.Configuration.TLS
    {
        guard let configuration = try tlsConfiguration(settings) else { return .disable }
        do {
            return .require(try NIOSSLContext(configuration: configuration))
        } catch {
            throw SettingError("cannot use the PostgreSQL TLS settings (HERALD_POSTGRES_TLS_*): \(error)")
        }
    }

    /// What a TLS failure means, in words an operator can act on; nil when `error` is not one.
    static func describeTLSFailure(_ error: any Error, settings: PostgresSettings) -> String? {
        if let error = error as? NIOSSLExtraError, error == .failedToValidateHostname {
            return """
                TLS: the server's certificate does not name "\(settings.host)" (verify-full checks the host name; \
                connect by a name the certificate lists, or use verify-ca)
                """
        }
        if let error = error as? NIOSSLError {
            let text = "\(error)"
            if text.contains("CERTIFICATE_VERIFY_FAILED") {
                let roots =
                    settings.tls.caFile.map { "HERALD_POSTGRES_TLS_CA_FILE \($0)" } ?? "the system's trust roots"
                return "TLS: the server's certificate is not signed by a CA in \(roots)"
            }
            return "TLS handshake failed: \(text)"
        }
        if let error = error as? PSQLError, error.code == .sslUnsupported {
            return "the server does not offer TLS (HERALD_POSTGRES_TLS_MODE is \(settings.tls.mode.rawValue))"
        }
        return nil
    }
}
