import ArgumentParser
import HeraldCLI

/// `herald-admin`: the server-side tools, apart from the operator's `herald` so that the operator
/// CLI links neither libpq, librdkafka nor nghttp2 — the local development stack, migrations,
/// Kafka diagnostics and credential re-sealing. `herald dev|migrate|kafka|credentials …` runs it.
struct HeraldAdmin: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald-admin",
        abstract:
            "Herald's server-side tools: the local development stack, migrations, Kafka diagnostics, credential re-sealing.",
        discussion: """
            The operator's herald runs these as herald dev, herald migrate, herald kafka and herald \
            credentials. Exit status: 0 done, 1 refused or failed, 2 wrong command line.
            """,
        subcommands: [DevCommand.self, MigrateCommand.self, KafkaCommand.self, CredentialsCommand.self]
    )
}

/// Runs `herald-admin` with the process's arguments.
public enum HeraldAdminCommandLine {
    public static func main() async -> Never {
        await HeraldCommandLine.main(root: HeraldAdmin.self)
    }
}
