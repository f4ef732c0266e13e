/// W3C Trace Context (`traceparent`, version 00): the trace a push belongs to, from the API
/// request that created it to the center's fan-out and the senders' deliveries. Herald writes
/// the trace id into every log line of the push; it exports no spans.
public struct TraceContext: Sendable, Equatable {
    /// 32 lowercase hexadecimal digits, not all zero.
    public let traceID: String
    /// 16 lowercase hexadecimal digits, not all zero: the span of whoever passed this on.
    public let parentID: String
    /// `01`: the caller samples this trace.
    public let flags: String

    /// The HTTP and Kafka header that carries it.
    public static let headerName = "traceparent"

    /// Reads a `traceparent` value. Versions above 00 are read by their first four fields, as the
    /// specification asks; nil for anything malformed (the caller then starts a new trace).
    public init?(traceparent: some StringProtocol) {
        let text = traceparent.trimmingWhitespace().lowercased()
        let fields = text.split(separator: "-", omittingEmptySubsequences: false)
        guard fields.count >= 4, fields[0].count == 2, fields[0] != "ff", Self.isHex(fields[0]) else { return nil }
        if fields[0] == "00", fields.count != 4 { return nil }
        let (trace, parent, flags) = (fields[1], fields[2], fields[3])
        guard trace.count == 32, Self.isHex(trace), trace.contains(where: { $0 != "0" }),
            parent.count == 16, Self.isHex(parent), parent.contains(where: { $0 != "0" }),
            flags.count == 2, Self.isHex(flags)
        else { return nil }
        self.traceID = String(trace)
        self.parentID = String(parent)
        self.flags = String(flags)
    }

    private init(traceID: String, parentID: String, flags: String) {
        self.traceID = traceID
        self.parentID = parentID
        self.flags = flags
    }

    /// A new trace (random ids, not sampled).
    public static func start() -> TraceContext {
        TraceContext(traceID: randomHex(bytes: 16), parentID: randomHex(bytes: 8), flags: "00")
    }

    /// The context to pass on from a new span of this trace: same trace id and flags, a new
    /// parent id.
    public func child() -> TraceContext {
        TraceContext(traceID: traceID, parentID: Self.randomHex(bytes: 8), flags: flags)
    }

    /// The header value: `00-<trace id>-<parent id>-<flags>`.
    public var traceparent: String { "00-\(traceID)-\(parentID)-\(flags)" }

    private static func isHex<Text: StringProtocol>(_ text: Text) -> Bool {
        text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    /// `bytes` random bytes as lower-case hex, never all zeros (W3C forbids it). Runs on every
    /// request the API accepts: eight bytes a draw from the system's generator, the digits
    /// written in place (it was a draw, and two Strings, per byte: 6% of herald-api's CPU under
    /// `make bench-api`).
    private static func randomHex(bytes: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        let digits: StaticString = "0123456789abcdef"
        while true {
            var nonZero = false
            let text = String(unsafeUninitializedCapacity: bytes * 2) { buffer in
                var written = 0
                while written < bytes * 2 {
                    var word = generator.next()
                    for _ in 0..<8 where written < bytes * 2 {
                        let byte = UInt8(truncatingIfNeeded: word)
                        word >>= 8
                        nonZero = nonZero || byte != 0
                        buffer[written] = digits.utf8Start[Int(byte >> 4)]
                        buffer[written + 1] = digits.utf8Start[Int(byte & 0x0F)]
                        written += 2
                    }
                }
                return written
            }
            if nonZero { return text }
        }
    }
}
