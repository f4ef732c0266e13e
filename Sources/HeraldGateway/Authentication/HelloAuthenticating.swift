import HeraldGatewayProtocol

/// What decides a connection's hello. ``GatewayAuthenticator`` is the one the gateway runs (the
/// app's client key, the device's token, its alias signature, against PostgreSQL); the connection
/// tests give a welcomed session one that accepts, without a database.
protocol HelloAuthenticating: Sendable {
    /// The verdict on `hello`, from a connection of `source` (the peer's address). Never throws:
    /// a failure to decide is a refusal the client can retry (`unavailable`).
    func authenticate(_ hello: GatewayHello, source: String) async -> GatewayAuthenticator.Verdict
}

extension GatewayAuthenticator: HelloAuthenticating {}
