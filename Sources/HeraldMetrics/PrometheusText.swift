/// Prometheus' text exposition format (version 0.0.4), written once for every Herald process:
/// a family's `# HELP` and `# TYPE` lines, then its samples, with label values escaped (an APNs
/// reason or a topic is text Herald does not control).
///
/// ```swift
/// var text = PrometheusText()
/// text.family("herald_sender_batches_total", .counter, help: "Job batches finished.")
/// text.sample("herald_sender_batches_total", value: batches)
/// ```
public struct PrometheusText: Sendable {
    /// A metric family's type.
    public enum Kind: String, Sendable {
        case counter, gauge, histogram
    }

    /// The exposition so far.
    public private(set) var text = ""

    public init() {}

    /// Starts the family `name`: its help text and type.
    public mutating func family(_ name: String, _ kind: Kind, help: String) {
        text += "# HELP \(name) \(Self.escapeHelp(help))\n# TYPE \(name) \(kind.rawValue)\n"
    }

    /// One sample of the family started last, with `labels` in the order given.
    public mutating func sample(_ name: String, _ labels: KeyValuePairs<String, String> = [:], value: some Numeric) {
        text += name
        if !labels.isEmpty {
            text += "{"
            var first = true
            for (label, labelValue) in labels {
                if !first { text += "," }
                first = false
                text += "\(label)=\"\(Self.escapeLabelValue(labelValue))\""
            }
            text += "}"
        }
        text += " \(value)\n"
    }

    /// A family with one unlabelled sample.
    public mutating func single(_ name: String, _ kind: Kind, help: String, value: some Numeric) {
        family(name, kind, help: help)
        sample(name, value: value)
    }

    /// Exposition written elsewhere (another component's families), appended as it is.
    public mutating func append(_ other: PrometheusText) { text += other.text }

    /// A label value as the format requires: backslash, double quote and line feed escaped.
    public static func escapeLabelValue(_ value: String) -> String {
        guard value.utf8.contains(where: { $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "\"") || $0 == 0x0A }) else {
            return value
        }
        var escaped = ""
        for character in value {
            switch character {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.append(character)
            }
        }
        return escaped
    }

    static func escapeHelp(_ help: String) -> String {
        var escaped = ""
        for character in help {
            switch character {
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}
