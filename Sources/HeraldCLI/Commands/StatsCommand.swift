import ArgumentParser
import Foundation
import HeraldAPIContract

/// `herald stats`: the app in numbers (a server key).
struct StatsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats", abstract: "The app in numbers: devices, pushes, delivery.")

    @Option(help: "Only pushes created since this time (ISO 8601).") var since: String?
    @OptionGroup var output: OutputOptions

    func validate() throws {
        if let since, Output.date(since) == nil {
            throw ValidationError("--since takes an ISO 8601 time, e.g. 2026-11-01T00:00:00Z")
        }
    }

    func run() async throws {
        let client = try APIConnection.app(try ClientConfiguration.load()).client
        let statistics = try await client.getStatistics(query: .init(since: since.flatMap(Output.date)))
            .ok.body.json
        try output.print(statistics, Self.text)
    }

    static func text(_ statistics: Components.Schemas.Statistics) -> String {
        let byEnvironment = statistics.devices.byEnvironment.additionalProperties.sorted { $0.key < $1.key }
            .map { "\($0.key) \(Output.count($0.value))" }.joined(separator: ", ")
        let pushes = statistics.pushes.additionalProperties.sorted { $0.key < $1.key }
            .map { "\($0.key) \(Output.count($0.value))" }.joined(separator: ", ")
        let delivery = PushProgress.Counters(statistics.delivery)
        return [
            "devices   active \(Output.count(statistics.devices.active)), invalid \(Output.count(statistics.devices.invalid))"
                + (byEnvironment.isEmpty ? "" : " (\(byEnvironment))"),
            "pushes    \(pushes.isEmpty ? "none" : pushes)",
            "delivery  targeted \(Output.count(delivery.targeted)), accepted \(Output.count(delivery.accepted)), "
                + "rejected \(Output.count(delivery.rejected))\(PushProgress.reasons(delivery)), "
                + "expired \(Output.count(delivery.expired)), canceled \(Output.count(delivery.canceled))",
        ].joined(separator: "\n")
    }
}
