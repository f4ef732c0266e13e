import Foundation
import HeraldCLI
import HeraldCore
import Logging

/// What every subcommand does first: logging to standard error and the configuration.
enum CommandSupport {
    static func bootstrap(label: String) async throws -> (HeraldConfiguration, Logger) {
        let configuration = try await HeraldConfiguration.load()
        try configuration.bootstrapLogging()
        return (configuration, Logger(label: label))
    }

    /// Prints one JSON object on a line of its own (the form scripts and tests read).
    static func printJSON(_ object: [String: Any]) {
        if let data = try? JSONSerialization.data(
            withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]),
            let text = String(data: data, encoding: .utf8)
        {
            print(text)
            fflush(nil)
        }
    }
}
