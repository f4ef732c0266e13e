import Foundation
import HeraldCore
import Synchronization

/// Per-app token buckets (or per app and source address, for the client keys' sub-buckets): an app may make `ratePerSecond` requests a second on average and
/// `burst` at once, across every herald-api process. Buckets live in this process's memory; each
/// process fills them at its ``share`` of the limit (the limit divided by the processes alive,
/// counted by ``APIReplicaHeartbeat``), so a load balancer spreading requests evenly over N
/// processes gives an app its limit, not N times it (docs/limits.md).
public final class RateLimiter: Sendable {
    /// What the limiter decided about one request.
    public struct Decision: Equatable, Sendable {
        public var allowed: Bool
        /// Whole requests left in the bucket after this one.
        public var remaining: Int
        /// When refused: seconds until one request is allowed again (at least 1).
        public var retryAfterSeconds: Int
    }

    public struct Bucket: Sendable {
        public var tokens: Double
        public var updated: Double

        public init(tokens: Double, updated: Double) {
            self.tokens = tokens
            self.updated = updated
        }
    }

    public let ratePerSecond: Int
    public let burst: Int
    /// herald-api processes sharing the limit (this one included), at least 1.
    public let replicas = Atomic<Int>(1)
    private let buckets = Mutex<(map: [Key: Bucket], swept: Double)>(([:], -.infinity))

    /// Whose bucket: an app's, an app's requests from one source (an IPv4 address, or an
    /// IPv6 address's /64, which one subscriber holds whole), or one source's whatever the app
    /// (herald-gateway's new connections, before anyone says which app they are).
    public struct Key: Hashable, Sendable {
        public var app: UUID?
        public var source: String?

        public init(app: UUID?, source: String? = nil) {
            self.app = app
            self.source = source.map(Self.network)
        }

        /// The part of `address` one client holds: an IPv4 address whole, an IPv6 one's /64.
        public static func network(_ address: String) -> String {
            guard let bytes = NetworkAddress.bytes(of: address) else { return address }
            // IPv4, and IPv4-mapped IPv6 (a dual-stack socket's view of an IPv4 peer).
            if bytes.count == 4 { return bytes.map(String.init).joined(separator: ".") }
            return bytes[0..<8].map { String($0, radix: 16) }.joined(separator: ":") + "::/64"
        }
    }
    /// Buckets kept before the full ones are dropped (a full bucket is what a new one is, so
    /// dropping it changes no decision): the map stays bounded whatever the number of apps.
    public let maximumBuckets: Int

    /// Seconds on a monotonic clock: ``now()`` in herald-api; a clock the test moves in tests, so
    /// that what a test sees never depends on how fast the machine answers.
    public typealias Clock = @Sendable () -> Double
    public let clock: Clock

    public init(ratePerSecond: Int, burst: Int, maximumBuckets: Int = 100_000, clock: @escaping Clock = RateLimiter.now)
    {
        self.ratePerSecond = max(1, ratePerSecond)
        self.burst = max(1, burst)
        self.maximumBuckets = max(1, maximumBuckets)
        self.clock = clock
    }

    /// Buckets held now.
    public var bucketCount: Int { buckets.withLock { $0.map.count } }

    /// Takes one token for `appID` now, by the limiter's clock.
    public func take(appID: UUID) -> Decision { take(Key(app: appID), now: clock()) }

    /// Takes one token for `appID`'s requests from `source` now.
    public func take(appID: UUID, source: String) -> Decision { take(Key(app: appID, source: source), now: clock()) }

    /// Takes one token for `source`, whatever the app, now.
    public func take(source: String) -> Decision { take(Key(app: nil, source: source), now: clock()) }

    /// Takes one token for `appID` at time `now` (seconds, monotonic).
    public func take(appID: UUID, now: Double) -> Decision { take(Key(app: appID), now: now) }

    /// Takes one token from `key`'s bucket at time `now` (seconds, monotonic).
    public func take(_ key: Key, now: Double) -> Decision {
        let share = Double(max(1, replicas.load(ordering: .relaxed)))
        let rate = Double(ratePerSecond) / share
        let burst = max(1, Double(self.burst) / share)
        return buckets.withLock { buckets in
            var key = key
            if buckets.map.count >= maximumBuckets, buckets.map[key] == nil {
                // Full again once `burst / rate` seconds have passed since the last request: those
                // go (a full bucket is what a new one is), at most once in that time.
                let fullAfter = burst / rate
                if now - buckets.swept >= fullAfter {
                    buckets.map = buckets.map.filter { now - $0.value.updated < fullAfter }
                    buckets.swept = now
                }
                // Still full (callers that keep changing their address, an IPv6 /64 each): the
                // newcomers of an app share one bucket, so the map and its sweeps stay bounded.
                if buckets.map.count >= maximumBuckets, key.source != nil { key.source = "overflow" }
            }
            var bucket = buckets.map[key] ?? Bucket(tokens: burst, updated: now)
            let decision = Self.take(&bucket, now: now, rate: rate, burst: burst)
            buckets.map[key] = bucket
            return decision
        }
    }

    /// The bucket arithmetic, without the lock.
    public static func take(_ bucket: inout Bucket, now: Double, rate: Double, burst: Double) -> Decision {
        bucket.tokens = min(burst, bucket.tokens + max(0, now - bucket.updated) * rate)
        bucket.updated = now
        guard bucket.tokens >= 1 else {
            let wait = (1 - bucket.tokens) / rate
            return Decision(allowed: false, remaining: 0, retryAfterSeconds: max(1, Int(wait.rounded(.up))))
        }
        bucket.tokens -= 1
        return Decision(allowed: true, remaining: Int(bucket.tokens), retryAfterSeconds: 0)
    }

    public static func now() -> Double {
        let duration = ContinuousClock.now - ContinuousClock.Instant.zeroReference
        return Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

extension ContinuousClock.Instant {
    fileprivate static let zeroReference = ContinuousClock.now
}
