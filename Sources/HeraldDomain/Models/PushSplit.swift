import Foundation

/// An A/B test's split of a push's audience (docs/engagement.md#ab-tests): named variants with
/// weights, and an optional holdout share that is targeted but never sent.
///
/// Every device's place is a pure function of (push id, device id): a fan-out resumed after a
/// crash, a batch rebuilt, and herald-api counting a reported open all find the same variant
/// without storing one per device.
public struct PushSplit: Sendable, Equatable, Codable {
    public struct Variant: Sendable, Equatable, Codable {
        /// 1 to 32 of `A-Z a-z 0-9 . _ -`.
        public var name: String
        /// 1 to 100; a variant's share of the sent devices is its weight over the weights' sum.
        public var weight: Int

        public init(name: String, weight: Int) {
            self.name = name
            self.weight = weight
        }
    }

    public var variants: [Variant]
    /// The share of the audience held out (0 to 0.5): targeted, never sent, counted `skipped`
    /// with the reason `holdout`.
    public var holdout: Double
    /// Winner mode: the share of the audience (its sample) the variants go to first; the rest
    /// gets the winner in the push's second phase. Nil: every device gets its variant at once.
    public var sample: Double? = nil
    /// Winner mode: how long after the sample's fan-out ends the winner is picked (unless the
    /// operator picked one before).
    public var waitSeconds: Int? = nil
    /// Winner mode: the variant the rest gets, once picked (by open rate, or by the operator).
    public var winner: Int? = nil
    /// Winner mode: the first batch of the second phase (batches before it are the sample's).
    public var secondPhaseFrom: Int? = nil

    enum CodingKeys: String, CodingKey {
        case variants, holdout, sample, winner
        case waitSeconds = "wait_seconds"
        case secondPhaseFrom = "second_phase_from"
    }

    /// Whether the push picks a winner from a sample.
    public var picksWinner: Bool { sample != nil }

    /// At most this many variants a push.
    public static let maximumVariants = 10
    /// At most this share held out.
    public static let maximumHoldout = 0.5

    public init(variants: [Variant], holdout: Double = 0) {
        self.variants = variants
        self.holdout = holdout
    }

    /// The variant (its index) device `deviceID` gets of push `pushID`; nil when it is held out
    /// (or, in winner mode, outside the sample before the winner is picked).
    ///
    /// One uniform draw per (push, device): below `holdout` it is held out; the rest of the unit
    /// interval is cut in proportion to the weights. In winner mode a second, independent draw
    /// puts the device in the sample (its variant as above) or in the rest (the winner).
    public func variant(pushID: UUID, deviceID: Int64) -> Int? {
        let draw = Self.draw(pushID: pushID, deviceID: deviceID)
        if draw < holdout { return nil }
        if phase(pushID: pushID, deviceID: deviceID) == 1 { return winner }
        let total = variants.reduce(0) { $0 + max(0, $1.weight) }
        guard total > 0 else { return 0 }
        let position = (draw - holdout) / (1 - holdout) * Double(total)
        var end = 0.0
        for (index, variant) in variants.enumerated() {
            end += Double(max(0, variant.weight))
            if position < end { return index }
        }
        return variants.count - 1
    }

    /// The phase that sends to device `deviceID`: 0 (the sample, or everyone without winner mode)
    /// or 1 (the rest, in winner mode).
    public func phase(pushID: UUID, deviceID: Int64) -> Int {
        guard let sample else { return 0 }
        // Another draw than the variant's: the sample holds every variant in its proportion.
        return Self.draw(pushID: pushID, deviceID: deviceID ^ Self.sampleSalt) < sample ? 0 : 1
    }

    /// The phase a batch belongs to, by its sequence.
    public func phase(ofBatch sequence: Int) -> Int {
        guard let secondPhaseFrom else { return 0 }
        return sequence >= secondPhaseFrom ? 1 : 0
    }

    private static let sampleSalt: Int64 = 0x5A17_C0DE_5A17_C0DE

    /// The winner by open rate: the variant with the most opens per device reached (ties, and a
    /// test nothing was reached by, go to the earliest variant).
    public static func bestVariant(reached: [Int64], opened: [Int64]) -> Int {
        var best = 0
        var bestRate = -1.0
        for index in reached.indices {
            let rate =
                reached[index] > 0 ? Double(index < opened.count ? opened[index] : 0) / Double(reached[index]) : 0
            if rate > bestRate {
                best = index
                bestRate = rate
            }
        }
        return best
    }

    /// A uniform number in [0, 1) from (push, device): SplitMix64's finalizer over the push id's
    /// two halves and the device id — stable across processes and releases (Swift's `Hasher` is
    /// seeded per process, so it cannot be used).
    static func draw(pushID: UUID, deviceID: Int64) -> Double {
        // The id's bytes as two little-endian halves, on every machine.
        let u = pushID.uuid
        let high =
            UInt64(u.0) | UInt64(u.1) << 8 | UInt64(u.2) << 16 | UInt64(u.3) << 24 | UInt64(u.4) << 32
            | UInt64(u.5) << 40 | UInt64(u.6) << 48 | UInt64(u.7) << 56
        let low =
            UInt64(u.8) | UInt64(u.9) << 8 | UInt64(u.10) << 16 | UInt64(u.11) << 24 | UInt64(u.12) << 32
            | UInt64(u.13) << 40 | UInt64(u.14) << 48 | UInt64(u.15) << 56
        let mixed = mix(high ^ mix(low ^ mix(UInt64(bitPattern: deviceID))))
        // The top 53 bits: every double in [0, 1) this can give is equally likely.
        return Double(mixed >> 11) * 0x1.0p-53
    }

    private static func mix(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// The split as stored (`pushes.split`).
    public var json: String {
        (try? String(decoding: JSONEncoder().encode(self), as: UTF8.self)) ?? "{}"
    }

    /// A stored split; nil when `json` is none (a push without variants).
    public init?(json: String?) {
        guard let json, let split = try? JSONDecoder().decode(PushSplit.self, from: Data(json.utf8)) else {
            return nil
        }
        self = split
    }
}

/// One variant's counters (or the holdout's), kept beside the push's: the variants' sums and the
/// holdout add up to the push's counters.
public struct VariantCounters: Sendable, Equatable {
    public var variant: Int
    public var targeted: Int64 = 0
    public var accepted: Int64 = 0
    public var deliveredOnline: Int64 = 0
    public var rejected: Int64 = 0
    public var expired: Int64 = 0
    public var canceled: Int64 = 0
    public var skipped: Int64 = 0

    public init(variant: Int) {
        self.variant = variant
    }
}

extension VariantCounters {
    /// Adds what `after` holds over `before` (a push's counters as one batch's outcome changed
    /// them) — the batch's outcome, for the variant it was cut for.
    public mutating func add(_ after: PushCounters, minus before: PushCounters) {
        targeted += after.targeted - before.targeted
        accepted += after.accepted - before.accepted
        deliveredOnline += after.deliveredOnline - before.deliveredOnline
        rejected += after.rejected - before.rejected
        expired += after.expired - before.expired
        canceled += after.canceled - before.canceled
        skipped += after.skipped - before.skipped
    }
}
