import Foundation
import Logging

/// The start every Herald service executable shares: read the configuration, set up logging to
/// standard error at its level, and on a problem print one line and exit 2.
public enum ServiceProcess {
    /// Stops the process with `message` on standard error, prefixed with the executable's name.
    public static func fail(_ executable: String, _ message: String) -> Never {
        FileHandle.standardError.write(Data("\(executable): \(message)\n".utf8))
        exit(2)
    }

    /// The configuration, with logging bootstrapped; exits 2 when it cannot be read.
    public static func start(_ executable: String) async -> HeraldConfiguration {
        let configuration: HeraldConfiguration
        do {
            configuration = try await HeraldConfiguration.load()
        } catch {
            fail(executable, "cannot read the configuration: \(error)")
        }
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = Logger.Level(rawValue: configuration.logLevel) ?? .info
            return handler
        }
        return configuration
    }
}
