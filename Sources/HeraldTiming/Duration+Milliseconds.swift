extension Duration {
    /// Whole milliseconds (truncated), for SQL intervals, wire formats and settings.
    public var wholeMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    /// Milliseconds with their fraction, for latencies and log lines.
    public var fractionalMilliseconds: Double {
        Double(components.seconds) * 1000 + Double(components.attoseconds) / 1e15
    }
}
