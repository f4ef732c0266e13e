import Foundation
import HeraldCore
import HeraldStore
import Synchronization

/// Finds the app key behind a bearer token, with a short cache so that a busy app does not
/// cost a database write per request.
///
/// A key found is remembered for `cacheTTL` (its `last_used_at` is written once per that
/// time); so is a key not found, so guessing costs the database nothing. A key revoked
/// through this process stops working at once; through another herald-api process within
/// `cacheTTL`.
final class KeyAuthenticator: Sendable {
    private struct Entry {
        var record: APIKeyRecord?
        var expires: ContinuousClock.Instant
    }

    private let keys: APIKeyRepository
    private let cacheTTL: Duration
    private let cache = Mutex<[[UInt8]: Entry]>([:])
    private static let maximumEntries = 100_000

    init(keys: APIKeyRepository, cacheTTL: Duration) {
        self.keys = keys
        self.cacheTTL = cacheTTL
    }

    /// The live key matching `key`, or `nil`.
    func authenticate(_ key: String) async throws -> APIKeyRecord? {
        let digest = SecretHasher.hash(key)
        let now = ContinuousClock.now
        if let entry = cache.withLock({ $0[digest] }), entry.expires > now { return entry.record }
        let record = try await keys.authenticate(key: key)
        cache.withLock { cache in
            if cache.count >= Self.maximumEntries { cache.removeAll(keepingCapacity: true) }
            cache[digest] = Entry(record: record, expires: now + cacheTTL)
        }
        return record
    }

    /// Forgets every cached key of `appID` (after a revocation, rotation or deletion).
    func forget(appID: UUID) {
        cache.withLock { cache in cache = cache.filter { $0.value.record?.appID != appID } }
    }
}
