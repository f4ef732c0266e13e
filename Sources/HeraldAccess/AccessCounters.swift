import Synchronization

/// What the admission primitives count, read by the process that owns them (herald-api's
/// `herald_api_authentication_*` and `…_key_lookups_total`, herald-gateway's own names).
public final class AccessCounters: Sendable {
    /// Keys or admin tokens that were not known.
    public let authenticationFailures = Atomic<Int>(0)
    /// Failures answered "too many" because their source failed too often.
    public let authenticationThrottled = Atomic<Int>(0)
    /// Keys looked up in the database (``KeyAuthenticator``'s cache misses).
    public let keyLookups = Atomic<Int>(0)

    public init() {}
}
