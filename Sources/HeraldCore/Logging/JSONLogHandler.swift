import Foundation
import Logging

/// Writes each log event as one JSON object on a line of its own to standard error
/// (`HERALD_LOG_FORMAT=json`): `time` (RFC 3339, UTC, milliseconds), `level`, `logger` (the
/// label), `message`, `source` (the module) and, when there is any, `metadata` (nested as the
/// metadata is: strings, arrays, objects).
public struct JSONLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let write: @Sendable (String) -> Void

    /// - Parameter write: where lines go (standard error by default; tests capture them).
    public init(label: String, write: @escaping @Sendable (String) -> Void = JSONLogHandler.standardError) {
        self.label = label
        self.write = write
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let extra = event.metadata { merged.merge(extra) { _, new in new } }
        var line = "{\"time\":"
        Self.appendString(Self.timestamp(Date()), to: &line)
        line += ",\"level\":"
        Self.appendString(event.level.rawValue, to: &line)
        line += ",\"logger\":"
        Self.appendString(label, to: &line)
        line += ",\"message\":"
        Self.appendString(event.message.description, to: &line)
        line += ",\"source\":"
        Self.appendString(event.source, to: &line)
        if !merged.isEmpty {
            line += ",\"metadata\":"
            Self.append(.dictionary(merged), to: &line)
        }
        line += "}\n"
        write(line)
    }

    /// Writes `line` to standard error in one call (lines of several threads do not interleave).
    public static let standardError: @Sendable (String) -> Void = { line in
        var line = line
        line.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = Foundation.write(2, bytes.baseAddress! + offset, bytes.count - offset)
                if written <= 0 { return }
                offset += written
            }
        }
    }

    static func timestamp(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        let seconds = time_t(milliseconds / 1000)
        var parts = tm()
        var copy = seconds
        gmtime_r(&copy, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
            Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), Int(milliseconds % 1000))
    }

    static func append(_ value: Logger.Metadata.Value, to line: inout String) {
        switch value {
        case .string(let text): appendString(text, to: &line)
        case .stringConvertible(let convertible): appendString(convertible.description, to: &line)
        case .array(let values):
            line += "["
            for (index, element) in values.enumerated() {
                if index > 0 { line += "," }
                append(element, to: &line)
            }
            line += "]"
        case .dictionary(let entries):
            line += "{"
            for (index, key) in entries.keys.sorted().enumerated() {
                if index > 0 { line += "," }
                appendString(key, to: &line)
                line += ":"
                append(entries[key]!, to: &line)
            }
            line += "}"
        }
    }

    /// `text` as a JSON string: quotes, backslashes and control characters escaped.
    static func appendString(_ text: String, to line: inout String) {
        line += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": line += "\\\""
            case "\\": line += "\\\\"
            case "\n": line += "\\n"
            case "\r": line += "\\r"
            case "\t": line += "\\t"
            case _ where scalar.value < 0x20:
                line += String(format: "\\u%04x", scalar.value)
            default: line.unicodeScalars.append(scalar)
            }
        }
        line += "\""
    }
}

/// How log lines are written (`HERALD_LOG_FORMAT`).
public enum LogFormat: String, Sendable, CaseIterable {
    /// swift-log's plain text lines (the default; what the dev stack shows).
    case text
    /// ``JSONLogHandler``'s lines, for a log collector.
    case json
}

extension HeraldConfiguration {
    /// Sends every logger of the process to standard error in the configured format and level.
    /// - Throws: ``SettingError`` for a format or level Herald does not know.
    public func bootstrapLogging() throws(SettingError) {
        guard let format = LogFormat(rawValue: logFormat) else {
            throw SettingError(
                "HERALD_LOG_FORMAT is \"\(logFormat)\"; it is one of \(LogFormat.allCases.map(\.rawValue).joined(separator: ", "))"
            )
        }
        guard let level = Logger.Level(rawValue: logLevel) else {
            throw SettingError(
                "HERALD_LOG_LEVEL is \"\(logLevel)\"; it is one of trace, debug, info, notice, warning, error, critical"
            )
        }
        LoggingSystem.bootstrap { label in
            switch format {
            case .text:
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = level
                return handler
            case .json:
                var handler = JSONLogHandler(label: label)
                handler.logLevel = level
                return handler
            }
        }
    }
}
