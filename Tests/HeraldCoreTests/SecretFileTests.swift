import Foundation
import HeraldCore
import Testing

@Suite("Secrets from files")
struct SecretFileTests {
    @Test(
        "a secret's *_FILE variant is read (trailing line break dropped); the variable itself wins; an unreadable file is named, not shown"
    )
    func secretFiles() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("herald-secret-\(UUID())").path
        try "s3cret-password\n".write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let fromFile = try await HeraldConfiguration.load(environment: [
            "HERALD_POSTGRES_PASSWORD_FILE": file, "HERALD_ADMIN_TOKEN_FILE": file,
        ])
        #expect(fromFile.postgres.password == "s3cret-password")
        #expect(fromFile.security.adminToken == "s3cret-password")
        let both = try await HeraldConfiguration.load(environment: [
            "HERALD_POSTGRES_PASSWORD": "direct", "HERALD_POSTGRES_PASSWORD_FILE": file,
        ])
        #expect(both.postgres.password == "direct")
        await #expect {
            _ = try await HeraldConfiguration.load(environment: ["HERALD_MASTER_KEY_FILE": "/nonexistent/key"])
        } throws: { "\($0)".contains("cannot read HERALD_MASTER_KEY_FILE /nonexistent/key") }
    }

    @Test(
        "plain TCP to a PostgreSQL that is not this machine is refused unless allowed; loopback, a Unix socket and TLS go"
    )
    func plaintextPostgresAcrossTheNetwork() async throws {
        await #expect {
            _ = try await HeraldConfiguration.load(environment: ["HERALD_POSTGRES_HOST": "db.internal"])
        } throws: { "\($0)".contains("HERALD_POSTGRES_ALLOW_PLAINTEXT=true") }
        await #expect(throws: (any Error).self) {
            _ = try await HeraldConfiguration.load(environment: [
                "HERALD_POSTGRES_HOST": "10.0.3.7", "HERALD_POSTGRES_TLS_MODE": "disable",
            ])
        }
        for host in ["127.0.0.1", "localhost", "::1", "/var/run/postgresql"] {
            #expect(
                try await HeraldConfiguration.load(environment: ["HERALD_POSTGRES_HOST": host]).postgres.host == host)
        }
        let allowed = try await HeraldConfiguration.load(environment: [
            "HERALD_POSTGRES_HOST": "postgres", "HERALD_POSTGRES_ALLOW_PLAINTEXT": "true",
        ])
        #expect(allowed.postgres.tls.mode == .disable)
        let encrypted = try await HeraldConfiguration.load(environment: [
            "HERALD_POSTGRES_HOST": "db.internal", "HERALD_POSTGRES_TLS_MODE": "require",
        ])
        #expect(encrypted.postgres.tls.mode == .require)
    }
}
