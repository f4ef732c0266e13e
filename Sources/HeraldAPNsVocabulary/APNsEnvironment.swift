/// Which APNs server a device token belongs to: a token issued by the sandbox is unknown to
/// production and the other way round. Stored as its raw value (`production`, `sandbox`).
public enum APNsEnvironment: String, Sendable, Hashable, Codable, CaseIterable {
    case production
    case sandbox
}
