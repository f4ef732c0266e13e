import ArgumentParser

/// `herald`, the operator's command-line tool.
@main
struct Herald: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald",
        abstract:
            "Operate Herald: apps, devices and pushes through the Open API; the local development stack; migrations and Kafka diagnostics.",
        discussion: """
            Configuration comes from HERALD_* environment variables, then the JSON file named by \
            HERALD_CONFIG_FILE, then defaults (see docs/configuration.md).
            """,
        subcommands: [
            AppCommand.self, DevicesCommand.self, PushCommand.self, StatsCommand.self,
            DevCommand.self, MigrateCommand.self, KafkaCommand.self,
        ]
    )
}
