import ArgumentParser
import HeraldCLI
import HeraldCore
import HeraldStore

/// `herald credentials …`: operations on the stored APNs credentials themselves, straight
/// against PostgreSQL (like `herald migrate`), for operators rotating the master key.
struct CredentialsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "credentials",
        abstract: "Operate on the stored APNs credentials (master key rotation).",
        subcommands: [CredentialsResealCommand.self])
}

/// `herald credentials reseal`: the second step of a master key rotation (docs/operations.md).
struct CredentialsResealCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reseal",
        abstract: "Seal every stored APNs credential again with HERALD_MASTER_KEY.",
        discussion: """
            Opens each credential sealed with another key (one of HERALD_MASTER_KEY_DECRYPT_ONLY) and seals \
            it again with HERALD_MASTER_KEY, in one transaction: run it again after an interruption, and \
            any time (it seals nothing twice). Refuses, changing nothing, when a stored credential is \
            sealed with a key none of the configured keys is. Prints {"resealed": N, "sealing_key": ID}.
            """)

    func run() async throws {
        let (configuration, logger) = try await CommandSupport.bootstrap(label: "herald.credentials")
        guard let cipher = try configuration.security.cipher() else {
            throw CLIError(
                "set HERALD_MASTER_KEY to the new master key and HERALD_MASTER_KEY_DECRYPT_ONLY to the old one(s)",
                status: .usage)
        }
        let resealed = try await HeraldDatabase.withClient(settings: configuration.postgres, logger: logger) {
            client in
            let credentials = CredentialRepository(client: client, logger: logger)
            try await credentials.checkSealingKeys(cipher)
            return try await credentials.resealWithSealingKey(cipher)
        }
        CommandSupport.printJSON(["resealed": resealed, "sealing_key": cipher.sealingKeyID])
    }
}
