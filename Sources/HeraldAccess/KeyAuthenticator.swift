import Foundation
import HeraldCore
import HeraldDomain
import HeraldStore
import Synchronization

/// Finds the app key behind a bearer token, with a short cache so that a busy app does not
/// cost a database look-up per request.
///
/// A key found is remembered for `cacheTTL` (its `last_used_at` is written once per that
/// time); so is a key not found, in a cache of its own, so guessing costs the database little and
/// a flood of made-up tokens never pushes real keys out: each cache forgets its least recently
/// used entry when full. Tokens not shaped like a Herald key never reach either cache or the
/// database. A key revoked through this process stops working at once; through another herald-api
/// process within `cacheTTL`. herald-api and herald-gateway each keep one.
public final class KeyAuthenticator: Sendable {
    private struct Entry {
        var record: APIKeyRecord?
        var expires: ContinuousClock.Instant
    }

    private struct Caches {
        var found: LeastRecentlyUsed<[UInt8], Entry>
        var notFound: LeastRecentlyUsed<[UInt8], Entry>
    }

    private let keys: APIKeyRepository
    private let cacheTTL: Duration
    private let caches: Mutex<Caches>
    private let counters: AccessCounters

    /// - Parameters:
    ///   - knownKeys: keys remembered at most (least recently used forgotten first).
    ///   - unknownTokens: tokens remembered as unknown at most.
    public init(
        keys: APIKeyRepository, cacheTTL: Duration, counters: AccessCounters, knownKeys: Int = 100_000,
        unknownTokens: Int = 10_000
    ) {
        self.keys = keys
        self.counters = counters
        self.cacheTTL = cacheTTL
        caches = Mutex(Caches(found: .init(capacity: knownKeys), notFound: .init(capacity: unknownTokens)))
    }

    /// The live key matching `key`, or `nil` (also, without a look-up, for a token that is not
    /// shaped like a key).
    public func authenticate(_ key: Substring) async throws -> APIKeyRecord? {
        guard APIKeySecret.isWellFormed(key) else { return nil }
        let digest = SecretHasher.hash(String(key))
        let now = ContinuousClock.now
        let cached: Entry? = caches.withLock { caches in
            if let entry = caches.found.value(for: digest), entry.expires > now { return entry }
            if let entry = caches.notFound.value(for: digest), entry.expires > now { return entry }
            return nil
        }
        if let cached { return cached.record }
        counters.keyLookups.add(1, ordering: .relaxed)
        let record = try await keys.authenticate(key: String(key))
        let entry = Entry(record: record, expires: now + cacheTTL)
        caches.withLock { caches in
            if record == nil { caches.notFound.set(entry, for: digest) } else { caches.found.set(entry, for: digest) }
        }
        return record
    }

    /// Whether `key` is a live key this process knows without asking the database.
    public func isCachedKey(_ key: Substring) -> Bool {
        guard APIKeySecret.isWellFormed(key) else { return false }
        let digest = SecretHasher.hash(String(key))
        let now = ContinuousClock.now
        return caches.withLock { caches in
            guard let entry = caches.found.value(for: digest) else { return false }
            return entry.expires > now && entry.record != nil
        }
    }

    /// Forgets every cached key of `appID` (after a revocation, rotation or deletion).
    public func forget(appID: UUID) {
        caches.withLock { caches in caches.found.removeAll { $0.record?.appID == appID } }
    }
}
