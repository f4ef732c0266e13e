/// The codes of the gateway's `Error` frame (docs/gateway.md lists them, with what each means and
/// what the client does; a test checks the two lists are the same).
public enum GatewayErrorCode: String, CaseIterable, Sendable {
    case helloRequired = "hello_required"
    case helloTimeout = "hello_timeout"
    case malformedFrame = "malformed_frame"
    case frameTooLarge = "frame_too_large"
    case unsupportedVersion = "unsupported_version"
    case unknownKey = "unknown_key"
    case unknownDevice = "unknown_device"
    case aliasSignatureRequired = "alias_signature_required"
    case aliasSignatureInvalid = "alias_signature_invalid"
    case aliasSignatureExpired = "alias_signature_expired"
    case tooManyFailedAuthentications = "too_many_failed_authentications"
    case tooManyConnections = "too_many_connections"
    case unavailable = "unavailable"
    case slowReader = "slow_reader"
    case idleTimeout = "idle_timeout"
    case replaced = "replaced"
    case unknownDelivery = "unknown_delivery"

    /// Whether the connection closes after the frame.
    public var isFatal: Bool { self != .unknownDelivery }
}
