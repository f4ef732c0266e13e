import ArgumentParser

/// `herald`, the operator's command-line tool.
@main
struct Herald: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald",
        abstract: "Operate Herald: database migrations, Kafka diagnostics and the local development stack.",
        discussion: """
            Configuration comes from HERALD_* environment variables, then the JSON file named by \
            HERALD_CONFIG_FILE, then defaults (see docs/configuration.md).
            """,
        subcommands: [MigrateCommand.self, KafkaCommand.self, DevCommand.self]
    )
}
