/// Which APNs server a device token belongs to: a token issued by the sandbox is unknown to
/// production and the other way round. Stored as its raw value (`production`, `sandbox`).
public enum APNsEnvironment: String, Sendable, Hashable, Codable, CaseIterable {
    case production
    case sandbox

    /// Apple's provider API host for this environment (port ``applePort``).
    public var appleHost: String {
        switch self {
        case .production: "api.push.apple.com"
        case .sandbox: "api.sandbox.push.apple.com"
        }
    }

    /// The provider API's port at Apple (2197 is Apple's alternative, for networks that block 443).
    public static let applePort = 443
}
