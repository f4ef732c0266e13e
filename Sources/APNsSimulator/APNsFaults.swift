#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Faults the simulator injects, set at start and replaceable at run time (admin `PUT /faults`).
///
/// Fractions are probabilities per request, from 0 to 1, drawn independently in this order:
/// drop the connection, never answer, 429, 500, 503. A request that meets no fault is answered
/// normally.
public struct APNsFaults: Codable, Sendable, Equatable {
    /// Added latency before each answer.
    public struct Latency: Codable, Sendable, Equatable {
        public enum Distribution: String, Codable, Sendable {
            /// Exactly `milliseconds`.
            case fixed
            /// Uniform between `milliseconds` and `maxMilliseconds`.
            case uniform
            /// Exponential with mean `milliseconds` (a long tail, as real networks have).
            case exponential
        }

        public var distribution: Distribution
        public var milliseconds: Double
        public var maxMilliseconds: Double?

        public init(distribution: Distribution = .fixed, milliseconds: Double, maxMilliseconds: Double? = nil) {
            self.distribution = distribution
            self.milliseconds = milliseconds
            self.maxMilliseconds = maxMilliseconds
        }
    }

    /// Fraction answered 429 TooManyRequests.
    public var tooManyRequests: Double = 0
    /// Fraction answered 500 InternalServerError.
    public var internalServerError: Double = 0
    /// Fraction answered 503 ServiceUnavailable.
    public var serviceUnavailable: Double = 0
    /// Fraction of streams never answered (the client's deadline has to end them).
    public var neverAnswer: Double = 0
    /// Fraction of requests on which the connection is closed without an answer or GOAWAY.
    public var dropConnection: Double = 0
    /// After answering this many requests, a connection sends GOAWAY (NO_ERROR) naming the
    /// last stream it processed and closes; streams above it were not processed.
    public var goAwayAfterRequests: Int?
    /// While true, each connection answers its next request 503 Shutdown, then sends GOAWAY and
    /// closes, as APNs does when a server goes down for maintenance.
    public var shutdown: Bool = false
    /// Latency added to every answer.
    public var latency: Latency?

    public init() {}

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        tooManyRequests = try container.decodeIfPresent(Double.self, forKey: .tooManyRequests) ?? 0
        internalServerError = try container.decodeIfPresent(Double.self, forKey: .internalServerError) ?? 0
        serviceUnavailable = try container.decodeIfPresent(Double.self, forKey: .serviceUnavailable) ?? 0
        neverAnswer = try container.decodeIfPresent(Double.self, forKey: .neverAnswer) ?? 0
        dropConnection = try container.decodeIfPresent(Double.self, forKey: .dropConnection) ?? 0
        goAwayAfterRequests = try container.decodeIfPresent(Int.self, forKey: .goAwayAfterRequests)
        shutdown = try container.decodeIfPresent(Bool.self, forKey: .shutdown) ?? false
        latency = try container.decodeIfPresent(Latency.self, forKey: .latency)
        try validate()
    }

    /// Whether any per-request fraction is set (so random numbers are drawn at all).
    var drawsRandomFaults: Bool {
        tooManyRequests > 0 || internalServerError > 0 || serviceUnavailable > 0 || neverAnswer > 0
            || dropConnection > 0
    }

    /// - Throws: ``APNsSimulatorError`` naming the field that is out of range.
    public func validate() throws {
        let fractions = [
            ("tooManyRequests", tooManyRequests), ("internalServerError", internalServerError),
            ("serviceUnavailable", serviceUnavailable), ("neverAnswer", neverAnswer),
            ("dropConnection", dropConnection),
        ]
        for (name, value) in fractions where !(0...1).contains(value) {
            throw APNsSimulatorError("fault \(name) must be a fraction from 0 to 1, got \(value)")
        }
        if let goAwayAfterRequests, goAwayAfterRequests < 1 {
            throw APNsSimulatorError("fault goAwayAfterRequests must be at least 1, got \(goAwayAfterRequests)")
        }
        if let latency {
            if latency.milliseconds < 0 { throw APNsSimulatorError("latency milliseconds must not be negative") }
            if latency.distribution == .uniform, (latency.maxMilliseconds ?? -1) < latency.milliseconds {
                throw APNsSimulatorError("uniform latency needs maxMilliseconds at least milliseconds")
            }
        }
    }

    /// Draws a latency in nanoseconds from `latency`, using `random` (uniform in 0..<1).
    func latencyNanoseconds(_ random: () -> Double) -> Int64 {
        guard let latency else { return 0 }
        let milliseconds: Double
        switch latency.distribution {
        case .fixed: milliseconds = latency.milliseconds
        case .uniform:
            milliseconds = latency.milliseconds + (latency.maxMilliseconds! - latency.milliseconds) * random()
        case .exponential: milliseconds = -latency.milliseconds * log(1 - random())
        }
        return Int64(milliseconds * 1_000_000)
    }
}
