import Foundation
import HeraldCore
import HeraldPostgresCopy
import HeraldStore
import Logging
import PostgresNIO
import Testing

/// TLS to the throwaway cluster, which `scripts/postgres.sh` starts with `ssl = on` and a CA of
/// its own in `.local/postgres/tls` (server certificate for "localhost" only; a client certificate
/// for the role herald_tls_client, which may log in with nothing else). Every mode goes through
/// the pool (postgres-nio) and through the libpq connection the audience `COPY` stream opens.
@Suite("PostgreSQL over TLS: pools and the COPY stream")
struct PostgresTLSTests {
    static let directory = ".local/postgres/tls"
    let logger = Logger(label: "test.postgres-tls")

    func settings(host: String = "localhost", _ tls: PostgresTLSSettings) async throws -> PostgresSettings {
        var settings = try await HeraldConfiguration.load().postgres
        settings.host = host
        settings.tls = tls
        return settings
    }

    /// A libpq connection as the audience stream opens it.
    static func copyConnection(_ settings: PostgresSettings) throws -> PostgresCopyConnection {
        try PostgresCopyConnection(
            .init(
                host: settings.host, port: settings.port, user: settings.user, password: settings.password,
                database: settings.database, extraParameters: settings.tls.libpqParameters))
    }

    /// Whether the pool's connection and a libpq connection opened with `settings` use TLS, as the
    /// server sees them (`pg_stat_ssl`).
    func serverSeesTLS(_ settings: PostgresSettings) async throws -> (pool: Bool, copy: Bool) {
        let pool = try await HeraldDatabase.withClient(settings: settings, logger: logger) { client in
            let rows = try await client.query(
                "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", logger: logger)
            for try await ssl in rows.decode(Bool.self) { return ssl }
            return false
        }
        var copy = false
        let connection = try Self.copyConnection(settings)
        try connection.copyOut(query: "SELECT ssl::int::int8 FROM pg_stat_ssl WHERE pid = pg_backend_pid()") { row in
            copy = row.int64(0) == 1
            return .more
        }
        return (pool, copy)
    }

    @Test("verify-full with the cluster's CA and its host name: both kinds of connection are TLS")
    func verifyFull() async throws {
        let settings = try await settings(.init(mode: .verifyFull, caFile: "\(Self.directory)/ca.crt"))
        let seen = try await serverSeesTLS(settings)
        #expect(seen.pool && seen.copy)
    }

    @Test("require needs no CA; disable is plain TCP")
    func requireAndDisable() async throws {
        let required = try await serverSeesTLS(try await settings(host: "127.0.0.1", .init(mode: .require)))
        #expect(required.pool && required.copy)
        let plain = try await serverSeesTLS(try await settings(host: "127.0.0.1", .init(mode: .disable)))
        #expect(!plain.pool && !plain.copy)
    }

    @Test("verify-full to a name the certificate does not list fails with one line on both paths, no password")
    func wrongHostName() async throws {
        var settings = try await settings(
            host: "127.0.0.1", .init(mode: .verifyFull, caFile: "\(Self.directory)/ca.crt"))
        settings.password = "secret-password-never-shown"
        let error = await #expect(throws: DatabaseUnreachable.self) {
            try await HeraldDatabase.withClient(settings: settings, logger: logger) { _ in }
        }
        let text = "\(error.map { "\($0)" } ?? "")"
        #expect(text.contains("does not name \"127.0.0.1\""), "\(text)")
        #expect(!text.contains("\n") && !text.contains(settings.password))
        // verify-ca does not check the name: the same host works.
        settings.tls.mode = .verifyCA
        settings.password = try await self.settings(.init()).password
        #expect(try await serverSeesTLS(settings) == (true, true))
        settings.tls.mode = .verifyFull
        #expect(throws: PostgresCopyError.self) { try Self.copyConnection(settings) }
    }

    @Test("a CA that did not sign the server's certificate: refused, and the line names the CA file")
    func wrongCA() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-other-ca-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let openssl = Process()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        openssl.arguments = [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
            "-subj", "/CN=Some other CA", "-keyout", directory.appendingPathComponent("ca.key").path,
            "-out", directory.appendingPathComponent("ca.crt").path,
        ]
        openssl.standardError = FileHandle.nullDevice
        try openssl.run()
        while openssl.isRunning { try await Task.sleep(for: .milliseconds(20)) }
        let otherCA = directory.appendingPathComponent("ca.crt").path
        let settings = try await settings(.init(mode: .verifyFull, caFile: otherCA))
        let error = await #expect(throws: DatabaseUnreachable.self) {
            try await HeraldDatabase.withClient(settings: settings, logger: logger) { _ in }
        }
        let text = "\(error.map { "\($0)" } ?? "")"
        #expect(text.contains("not signed by a CA in HERALD_POSTGRES_TLS_CA_FILE \(otherCA)"), "\(text)")
        #expect(!text.contains("\n"))
        #expect(throws: PostgresCopyError.self) { try Self.copyConnection(settings) }
    }

    @Test("a client certificate logs in the role that may only log in with it; without it the role is refused")
    func clientCertificate() async throws {
        var settings = try await settings(
            .init(
                mode: .verifyFull, caFile: "\(Self.directory)/ca.crt",
                certificateFile: "\(Self.directory)/client.crt", keyFile: "\(Self.directory)/client.key"))
        settings.user = "herald_tls_client"
        settings.password = ""
        #expect(try await serverSeesTLS(settings) == (true, true))
        settings.tls.certificateFile = nil
        settings.tls.keyFile = nil
        await #expect(throws: DatabaseUnreachable.self) {
            try await HeraldDatabase.withClient(settings: settings, logger: logger) { _ in }
        }
    }

    @Test("settings Herald cannot start with are refused when read, naming the variable")
    func refusedSettings() async throws {
        func load(_ variables: [String: String]) async throws {
            _ = try await HeraldConfiguration.load(environment: variables)
        }
        await #expect(throws: SettingError.self) { try await load(["HERALD_POSTGRES_TLS_MODE": "prefer"]) }
        await #expect(throws: SettingError.self) {
            try await load([
                "HERALD_POSTGRES_TLS_MODE": "verify-full", "HERALD_POSTGRES_TLS_CA_FILE": "/nonexistent/ca.crt",
            ])
        }
        await #expect(throws: SettingError.self) {
            try await load(["HERALD_POSTGRES_TLS_CERTIFICATE_FILE": "\(Self.directory)/client.crt"])
        }
        let read = try await HeraldConfiguration.load(environment: [
            "HERALD_POSTGRES_TLS_MODE": "VERIFY-FULL", "HERALD_POSTGRES_TLS_CA_FILE": "\(Self.directory)/ca.crt",
        ])
        #expect(read.postgres.tls == .init(mode: .verifyFull, caFile: "\(Self.directory)/ca.crt"))
    }
}
