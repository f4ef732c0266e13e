import Foundation
import Logging
import Synchronization

/// The start every Herald service executable shares: read the configuration, set up logging to
/// standard error in its format and at its level, and on a problem print one line and exit 2.
public enum ServiceProcess {
    /// Whether logging was set up as JSON (then the last line is a JSON object too).
    private static let jsonLines = Atomic(false)

    /// Stops the process with `message` on standard error, prefixed with the executable's name
    /// (or, with `HERALD_LOG_FORMAT=json`, as a `critical` JSON log line).
    public static func fail(_ executable: String, _ message: String) -> Never {
        if jsonLines.load(ordering: .relaxed) {
            JSONLogHandler(label: executable).log(
                event: LogEvent(
                    level: .critical, message: "\(message)", metadata: nil, source: executable,
                    file: #fileID, function: #function, line: #line))
        } else {
            FileHandle.standardError.write(Data("\(executable): \(message)\n".utf8))
        }
        exit(2)
    }

    /// The configuration, with logging bootstrapped; exits 2 when it cannot be read.
    public static func start(_ executable: String) async -> HeraldConfiguration {
        var configuration: HeraldConfiguration
        do {
            configuration = try await HeraldConfiguration.load()
            // PostgreSQL shows each connection's process in pg_stat_activity (and so in
            // herald_postgres_connections).
            configuration.postgres.applicationName = executable
        } catch {
            fail(executable, "cannot read the configuration: \(error)")
        }
        do {
            try configuration.bootstrapLogging()
        } catch {
            fail(executable, "\(error)")
        }
        jsonLines.store(configuration.logFormat == LogFormat.json.rawValue, ordering: .relaxed)
        return configuration
    }
}
