import APNsSimulator
import Crypto
import Foundation
import HeraldHTTP2
import Testing

/// Token-based provider authentication, as APNs enforces it per connection.
@Suite("apns-sim checks provider tokens")
struct ProviderTokenTests {
    @Test("no token and no client certificate: 403 MissingProviderToken")
    func missing() async throws {
        try await withSimulator { simulator in
            let connection = try await connect(to: simulator)
            let response = try await connection.send(notification(authorization: nil), timeout: .seconds(5))
            #expect(response.status == 403)
            #expect(response.reason == "MissingProviderToken")
            await connection.close()
        }
    }

    @Test("a token signed by another key, with an unknown key id, a foreign team or garbage: 403 InvalidProviderToken")
    func invalid() async throws {
        let tokens = [
            try providerToken(key: P256.Signing.PrivateKey()),
            try providerToken(keyID: "NOSUCHKEY1"),
            try providerToken(teamID: "OTHERTEAM1"),
            "not.a.jwt",
            "garbage",
        ]
        try await withSimulator { simulator in
            for token in tokens {
                let connection = try await connect(to: simulator)
                let response = try await connection.send(notification(authorization: token), timeout: .seconds(5))
                #expect(response.status == 403, "\(token)")
                #expect(response.reason == "InvalidProviderToken", "\(token)")
                await connection.close()
            }
            #expect(simulator.ledger.counts.accepted == 0)
        }
    }

    @Test("a token issued more than an hour ago: 403 ExpiredProviderToken")
    func expired() async throws {
        try await withSimulator { simulator in
            let connection = try await connect(to: simulator)
            let old = try providerToken(issuedAt: Int(Date().timeIntervalSince1970) - 3700)
            let response = try await connection.send(notification(authorization: old), timeout: .seconds(5))
            #expect(response.status == 403)
            #expect(response.reason == "ExpiredProviderToken")
            await connection.close()
        }
    }

    @Test("a new token on a connection within 20 minutes: 429 TooManyProviderTokenUpdates; the first keeps working")
    func tooManyUpdates() async throws {
        try await withSimulator { simulator in
            let connection = try await connect(to: simulator)
            let first = try providerToken()
            #expect(try await connection.send(notification(authorization: first), timeout: .seconds(5)).status == 200)
            let second = try providerToken(issuedAt: Int(Date().timeIntervalSince1970) - 5)
            let refused = try await connection.send(notification(authorization: second), timeout: .seconds(5))
            #expect(refused.status == 429)
            #expect(refused.reason == "TooManyProviderTokenUpdates")
            #expect(try await connection.send(notification(authorization: first), timeout: .seconds(5)).status == 200)
            // Another connection may use the second token: the rule is per connection.
            let other = try await connect(to: simulator)
            #expect(try await other.send(notification(authorization: second), timeout: .seconds(5)).status == 200)
            await connection.close()
            await other.close()
        }
    }

    @Test("a token of another team on a connection that used one team: 403 InvalidProviderToken")
    func otherTeamOnConnection() async throws {
        let otherKey = P256.Signing.PrivateKey()
        let configuration = Fixture.configuration {
            $0.keys.append(
                ProviderKey(
                    keyID: "KEY0000002", teamID: "TEAM000002", publicKeyPEM: otherKey.publicKey.pemRepresentation,
                    topics: []))
            $0.providerTokenUpdateInterval = .zero
        }
        try await withSimulator(configuration) { simulator in
            let connection = try await connect(to: simulator)
            #expect(
                try await connection.send(notification(authorization: try providerToken()), timeout: .seconds(5)).status
                    == 200)
            let foreign = try providerToken(key: otherKey, keyID: "KEY0000002", teamID: "TEAM000002")
            let response = try await connection.send(notification(authorization: foreign), timeout: .seconds(5))
            #expect(response.status == 403)
            #expect(response.reason == "InvalidProviderToken")
            await connection.close()
        }
    }

    @Test("keys added at run time are trusted from then on")
    func keyAddedAtRunTime() async throws {
        try await withSimulator { simulator in
            let key = P256.Signing.PrivateKey()
            let token = try providerToken(key: key, keyID: "LATEKEY001")
            let connection = try await connect(to: simulator)
            #expect(
                try await connection.send(notification(authorization: token), timeout: .seconds(5)).reason
                    == "InvalidProviderToken")
            try simulator.keys.register(
                ProviderKey(
                    keyID: "LATEKEY001", teamID: Fixture.teamID, publicKeyPEM: key.publicKey.pemRepresentation,
                    topics: [Fixture.topic]))
            let fresh = try await connect(to: simulator)
            #expect(try await fresh.send(notification(authorization: token), timeout: .seconds(5)).status == 200)
            await connection.close()
            await fresh.close()
        }
    }
}
