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

    /// What the command line asks of a service executable, which takes no arguments.
    public enum CommandLineAnswer: Equatable, Sendable {
        /// No arguments: start the service.
        case start
        /// `--help` or `--version`: print this on standard output and exit 0.
        case print(String)
        /// Anything else: print this on standard error and exit 2.
        case refuse(String)
    }

    /// Answers `--help` (`-h`) and `--version` without reading any setting or connecting anywhere,
    /// and refuses other arguments.
    /// - Parameters:
    ///   - executable: the program's name.
    ///   - about: what the program does and which ports it serves, for `--help`.
    ///   - arguments: the arguments after the program's name.
    public static func answer(_ arguments: [String], executable: String, about: String) -> CommandLineAnswer {
        guard let first = arguments.first else { return .start }
        switch first {
        case "--help", "-h", "help":
            return .print(
                """
                \(executable) \(HeraldVersion.current): \(about)

                Usage: \(executable) [--help | --version]

                It takes no arguments. Its settings come from the environment (HERALD_*), or from
                the JSON file HERALD_CONFIG_FILE names; every setting, its default and its meaning
                are in docs/configuration.md. Secrets may come from files (HERALD_MASTER_KEY_FILE, …).
                SIGTERM or SIGINT stops it gracefully.
                """)
        case "--version":
            return .print("\(executable) \(HeraldVersion.current)")
        default:
            return .refuse(
                "takes no arguments (got \(first)); its settings come from the environment (docs/configuration.md). Try \(executable) --help"
            )
        }
    }

    /// Returns when the process was started without arguments; answers `--help` and `--version`
    /// (exit 0) and refuses anything else (exit 2) — see ``answer(_:executable:about:)``.
    public static func answerCommandLine(_ executable: String, about: String) {
        switch answer(Array(CommandLine.arguments.dropFirst()), executable: executable, about: about) {
        case .start:
            return
        case .print(let text):
            print(text)
            exit(0)
        case .refuse(let text):
            FileHandle.standardError.write(Data("\(executable): \(text)\n".utf8))
            exit(2)
        }
    }

    /// The configuration, with logging bootstrapped; exits 2 when it cannot be read. Answers
    /// `--help` and `--version` first (exit 0) and refuses other arguments (exit 2).
    public static func start(_ executable: String, about: String) async -> HeraldConfiguration {
        answerCommandLine(executable, about: about)
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
