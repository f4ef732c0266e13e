import APNsSimulator
import HeraldAPNs
import ServiceLifecycle

/// Starts apns-sim in-process with `simulator`, and an `APNsClient` to it running in a
/// `ServiceGroup`; runs `body`; stops both (also when `body` throws). Shared by the client's and
/// the sender's tests.
public func withAPNsClient(
    simulator configuration: APNsSimulatorConfiguration,
    credential: APNsCredential,
    client adjust: (inout APNsClientConfiguration) -> Void = { _ in },
    clock: APNsClock = .system,
    _ body: (APNsSimulator, APNsClient) async throws -> Void
) async throws {
    let simulator = try await APNsSimulator.start(configuration)
    var clientConfiguration = APNsClientConfiguration()
    clientConfiguration.connectionSpacing = .milliseconds(10)
    adjust(&clientConfiguration)
    let endpoint = APNsEndpoint(
        host: "localhost", port: simulator.port, trustedCertificates: simulator.identity.certificateChain)
    let client: APNsClient
    do {
        client = try APNsClient(
            endpoint: endpoint, credential: credential, configuration: clientConfiguration, clock: clock)
    } catch {
        await simulator.shutdown()
        throw error
    }
    let group = ServiceGroup(services: [client], logger: .init(label: "test"))
    try await withThrowingTaskGroup(of: Void.self) { tasks in
        tasks.addTask { try await group.run() }
        do {
            try await body(simulator, client)
        } catch {
            await group.triggerGracefulShutdown()
            await simulator.shutdown()
            throw error
        }
        await group.triggerGracefulShutdown()
        try await tasks.waitForAll()
    }
    await simulator.shutdown()
}
