import ArgumentParser
import HeraldCLI
import HeraldCore
import HeraldStore

/// `herald migrate`: applies the PostgreSQL migrations not yet applied.
struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Apply Herald's PostgreSQL migrations (safe to run any time; each applies once)."
    )

    func run() async throws {
        let (configuration, logger) = try await CommandSupport.bootstrap(label: "herald.migrate")
        let applied = try await HeraldDatabase.withClient(settings: configuration.postgres, logger: logger) { client in
            let runner = try MigrationRunner(client: client, logger: logger)
            let applied = try await runner.migrate()
            return (applied, try await runner.appliedVersions())
        }
        CommandSupport.printJSON(["applied": applied.0, "schema_versions": applied.1])
    }
}
