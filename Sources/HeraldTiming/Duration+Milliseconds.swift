extension Duration {
    /// Whole milliseconds (truncated), for SQL intervals, wire formats and settings.
    public var wholeMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    /// Seconds with their fraction, for rates and what people read.
    public var fractionalSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }

    /// Milliseconds with their fraction, for latencies and log lines.
    public var fractionalMilliseconds: Double {
        Double(components.seconds) * 1000 + Double(components.attoseconds) / 1e15
    }
}
