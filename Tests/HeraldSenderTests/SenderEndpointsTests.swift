import APNsSimulator
import Foundation
import HeraldCore
import HeraldHTTP2
import HeraldSender
import NIOSSL
import Testing

/// Which certificates each APNs endpoint trusts: the system's roots always, plus the file set
/// for that endpoint only.
@Suite("herald-sender's APNs endpoints")
struct SenderEndpointsTests {
    @Test(
        "a sandbox certificate file adds to the system roots for sandbox only; production still trusts the system roots alone"
    )
    func trustIsAdditionalAndPerEndpoint() async throws {
        let (identity, _) = try SimulatorIdentity.selfSigned()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("apns-sim-\(UUID()).pem").path
        try identity.certificatePEM.write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let configuration = try await HeraldConfiguration.load(environment: [
            "HERALD_SENDER_APNS_SANDBOX_HOST": "127.0.0.1",
            "HERALD_SENDER_APNS_SANDBOX_TRUST_CERTIFICATE_FILE": file,
        ])
        try configuration.sender.checkTrustSettings()
        let endpoints = try SenderEndpoints(settings: configuration.sender)
        #expect(endpoints.sandbox.trustedCertificates == identity.certificateChain)
        #expect(endpoints.production.trustedCertificates.isEmpty)
        #expect(endpoints.production.host == "api.push.apple.com")

        let sandbox = HTTP2TLS.clientConfiguration(trustedCertificates: endpoints.sandbox.trustedCertificates)
        #expect(sandbox.trustRoots == .default, "the system's roots stay trusted")
        #expect(sandbox.additionalTrustRoots == [.certificates(identity.certificateChain)])
        let production = HTTP2TLS.clientConfiguration(trustedCertificates: endpoints.production.trustedCertificates)
        #expect(production.trustRoots == .default)
        #expect(production.additionalTrustRoots.isEmpty)
    }

    @Test("the retired one-file setting and an unreadable file are refused with what to set instead")
    func wrongSettingsAreRefused() async throws {
        let retired = try await HeraldConfiguration.load(environment: [
            "HERALD_SENDER_APNS_TRUST_CERTIFICATE_FILE": "/etc/apns-sim.pem"
        ])
        #expect {
            try retired.sender.checkTrustSettings()
        } throws: { error in
            "\(error)".contains("HERALD_SENDER_APNS_SANDBOX_TRUST_CERTIFICATE_FILE")
        }
        let missing = try await HeraldConfiguration.load(environment: [
            "HERALD_SENDER_APNS_PRODUCTION_TRUST_CERTIFICATE_FILE": "/nonexistent/apns.pem"
        ])
        #expect {
            _ = try SenderEndpoints(settings: missing.sender)
        } throws: { error in
            "\(error)".contains("HERALD_SENDER_APNS_PRODUCTION_TRUST_CERTIFICATE_FILE /nonexistent/apns.pem")
        }
    }
}
