import HeraldAPIContract

/// What `herald-admin dev verify` reads through the Open API, with the key `herald` would use:
/// the app's devices, a push's status and its failures. The generated client stays this
/// module's own; herald-admin gets these three reads, every page of them.
package struct StackVerificationAPI: Sendable {
    let client: Client

    /// The app whose key the CLI configuration (HERALD_CLI_CONFIG, HERALD_API_KEY, …) names.
    /// - Throws: ``CLIError`` when no key or URL is configured.
    package static func app() throws -> StackVerificationAPI {
        StackVerificationAPI(client: try APIConnection.app(try ClientConfiguration.load()).client)
    }

    /// Every device of the app, active and invalid.
    package func devices() async throws -> [Components.Schemas.Device] {
        try await APIConnection.everyItem { cursor in
            let page = try await client.listDevices(query: .init(cursor: cursor, limit: 1000)).ok.body.json
            return (page.devices, page.nextCursor)
        }
    }

    /// The push's status.
    package func push(_ pushID: String) async throws -> Components.Schemas.PushStatus {
        try await client.getPush(path: .init(pushId: pushID)).ok.body.json
    }

    /// Every device the push did not reach, with why.
    package func failures(pushID: String) async throws -> [Components.Schemas.Failure] {
        try await APIConnection.everyItem { cursor in
            let page = try await client.listPushFailures(
                path: .init(pushId: pushID), query: .init(cursor: cursor, limit: 1000)
            ).ok.body.json
            return (page.failures, page.nextCursor)
        }
    }
}
