import APNsSimulator
import Crypto
import Foundation
import HeraldHTTP2
import NIOCore
import NIOPosix
import NIOSSL
import Testing

/// Topics and tokens every simulator test uses.
enum Fixture {
    static let topic = "com.herald.demo"
    static let otherTopic = "com.herald.other"
    static let teamID = "TEAM000001"
    static let keyID = "KEY0000001"
    static let deliverable = "aa11bb22cc33dd44"
    /// 32-byte tokens as phones have them today.
    static let deliverableLong = String(repeating: "0123456789abcdef", count: 4)
    static let unregistered = "ee55ff66"
    static let unregisteredAt: Int64 = 1_700_000_000_123
    static let ofOtherTopic = "0011223344556677"
    static let signingKey = P256.Signing.PrivateKey()
    static let group = MultiThreadedEventLoopGroup.singleton

    static func configuration(_ adjust: (inout APNsSimulatorConfiguration) -> Void = { _ in })
        -> APNsSimulatorConfiguration
    {
        var configuration = APNsSimulatorConfiguration()
        configuration.port = 0
        configuration.adminPort = nil
        configuration.threads = 1
        configuration.keys = [
            ProviderKey(
                keyID: keyID, teamID: teamID, publicKeyPEM: signingKey.publicKey.pemRepresentation, topics: [topic])
        ]
        configuration.devices = [
            SimulatedDevice(token: deliverable, topic: topic),
            SimulatedDevice(token: deliverableLong, topic: topic),
            SimulatedDevice(token: unregistered, topic: topic, unregisteredAt: unregisteredAt),
            SimulatedDevice(token: ofOtherTopic, topic: otherTopic),
        ]
        adjust(&configuration)
        return configuration
    }
}

/// Runs `body` against a simulator started in-process on a free port, then stops it.
func withSimulator(
    _ configuration: APNsSimulatorConfiguration = Fixture.configuration(),
    _ body: (APNsSimulator) async throws -> Void
) async throws {
    let simulator = try await APNsSimulator.start(configuration)
    do {
        try await body(simulator)
    } catch {
        await simulator.shutdown()
        throw error
    }
    await simulator.shutdown()
}

/// Opens an HTTP/2 connection to `simulator` over TLS, trusting its certificate.
func connect(to simulator: APNsSimulator, clientCertificate: (chain: [NIOSSLCertificate], key: NIOSSLPrivateKey)? = nil)
    async throws -> HTTP2ClientConnection
{
    let tls = HTTP2TLS.clientConfiguration(
        trustedCertificates: simulator.identity.certificateChain, clientCertificate: clientCertificate)
    return try await HTTP2ClientConnection.connect(
        host: "localhost", port: simulator.port, tls: try NIOSSLContext(configuration: tls), group: Fixture.group)
}

/// An ES256 provider token, as a provider signs it.
func providerToken(
    key: P256.Signing.PrivateKey = Fixture.signingKey, keyID: String = Fixture.keyID,
    teamID: String = Fixture.teamID, issuedAt: Int = Int(Date().timeIntervalSince1970)
) throws -> String {
    func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
    let header = base64URL(Data(#"{"alg":"ES256","kid":"\#(keyID)"}"#.utf8))
    let claims = base64URL(Data(#"{"iss":"\#(teamID)","iat":\#(issuedAt)}"#.utf8))
    let signature = try key.signature(for: Data("\(header).\(claims)".utf8)).rawRepresentation
    return "\(header).\(claims).\(base64URL(signature))"
}

/// A notification request as Herald's sender will make it; adjust what a test varies.
func notification(
    to token: String = Fixture.deliverable, topic: String? = Fixture.topic, authorization: String?,
    payload: String = #"{"aps":{"alert":"hello"}}"#, headers extra: [HTTP2HeaderField] = [],
    method: String = "POST", path: String? = nil
) -> HTTP2Request {
    var headers: [HTTP2HeaderField] = []
    if let authorization { headers.append(HTTP2HeaderField("authorization", "bearer \(authorization)")) }
    if let topic { headers.append(HTTP2HeaderField("apns-topic", topic)) }
    headers += extra
    return HTTP2Request(
        method: method, path: path ?? "/3/device/\(token)", authority: "localhost",
        headers: headers, body: payload.isEmpty ? nil : ByteBuffer(string: payload))
}

extension HTTP2Response {
    /// The `reason` of Apple's JSON error body, or nil.
    var reason: String? {
        guard body.readableBytes > 0,
            let object = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]
        else { return nil }
        return object["reason"] as? String
    }

    var timestamp: Int64? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]
        else { return nil }
        return (object["timestamp"] as? NSNumber)?.int64Value
    }
}

/// Waits (polling) until `condition` holds or about five seconds pass.
func eventually(_ condition: () async throws -> Bool) async rethrows -> Bool {
    for _ in 0..<250 {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return try await condition()
}
