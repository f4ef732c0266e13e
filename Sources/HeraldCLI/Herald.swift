import ArgumentParser
import Foundation

/// `herald`, the operator's command-line tool.
struct Herald: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald",
        abstract:
            "Operate Herald: apps, devices and pushes through the Open API. The local development stack, migrations and Kafka diagnostics are herald-admin's (`herald dev`, `herald migrate`, `herald kafka` and `herald credentials` run it).",
        discussion: """
            herald-api is found at HERALD_API_URL with the key in HERALD_API_KEY (an app's server \
            key) or HERALD_ADMIN_TOKEN, or in the file HERALD_CLI_CONFIG names. Every command \
            that prints data takes --json. Exit status: 0 done, 1 refused or failed, 2 wrong \
            command line, 3 herald-api unreachable or unavailable (try again), 4 key refused.
            """,
        subcommands: [
            AppCommand.self, DevicesCommand.self, PushCommand.self, StatsCommand.self, APICommand.self,
            SegmentsCommand.self, TemplatesCommand.self, SchedulesCommand.self, WebhooksCommand.self,
            AdminDevCommand.self, AdminMigrateCommand.self, AdminKafkaCommand.self, AdminCredentialsCommand.self,
        ]
    )
}

/// Runs `herald` (or, given its root command, `herald-admin`) with the process's arguments and
/// ends the process with an ``ExitStatus``.
public enum HeraldCommandLine {
    public static func main(_ arguments: [String] = Array(CommandLine.arguments.dropFirst())) async -> Never {
        await main(root: Herald.self, arguments)
    }

    public static func main(
        root: any ParsableCommand.Type, _ arguments: [String] = Array(CommandLine.arguments.dropFirst())
    ) async -> Never {
        do {
            var command = try root.parseAsRoot(arguments)
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
            exit(ExitStatus.success.rawValue)
        } catch {
            let (status, message) = outcome(of: error, root: root)
            if !message.isEmpty {
                FileHandle.standardError.write(Data((message + "\n").utf8))
            }
            exit(status.rawValue)
        }
    }

    /// The exit status and the message for an error a command ended with.
    static func outcome(of error: any Error, root: any ParsableCommand.Type = Herald.self) -> (ExitStatus, String) {
        switch error.unwrappedFromClient {
        case let error as CLIError:
            return (error.status, "herald: " + error.description)
        case let error as APIFailure:
            return (error.exitStatus, "herald: " + error.description)
        case let error as ExitCode:
            if error == .success { return (.success, "") }
            return (error == .validationFailure ? .usage : .failure, "")
        case let other:
            let code = root.exitCode(for: other)
            let message = root.fullMessage(for: other)
            if code == .success { return (.success, message) }  // --help, --version
            // What ArgumentParser reports itself (a parse or validation error) is a wrong command line.
            if code == .validationFailure { return (.usage, message) }
            return (.failure, "herald: " + message)
        }
    }
}
