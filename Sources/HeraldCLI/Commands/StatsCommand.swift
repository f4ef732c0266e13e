import ArgumentParser
import Foundation
import HeraldAPIContract

/// `herald stats`: the app in numbers (a server key).
struct StatsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats", abstract: "The app in numbers: devices, pushes, delivery; or its tags' devices (--tags).")

    @Option(help: "Only pushes created since this time (ISO 8601).") var since: String?
    @Flag(help: "List the app's tags with their devices instead (every page, in tag order).") var tags = false
    @Option(help: "With --tags: only tags that start with this.") var prefix: String?
    @OptionGroup var output: OutputOptions

    func validate() throws {
        if let since, Output.date(since) == nil {
            throw ValidationError("--since takes an ISO 8601 time, e.g. 2026-11-01T00:00:00Z")
        }
        if prefix != nil, !tags { throw ValidationError("--prefix goes with --tags") }
        if tags, since != nil { throw ValidationError("--since counts pushes; --tags counts devices") }
    }

    func run() async throws {
        let client = try APIConnection.app(try ClientConfiguration.load()).client
        if tags {
            var all: [Components.Schemas.TagStatistics] = []
            var cursor: String?
            repeat {
                let page = try await client.listTagStatistics(
                    query: .init(prefix: prefix, cursor: cursor, limit: 1000)
                ).ok.body.json
                all += page.tags
                cursor = page.nextCursor
            } while cursor != nil
            try output.print(all, Self.text)
            return
        }
        // The daily timeline carries what devices reported (docs/engagement.md).
        let statistics = try await client.getStatistics(
            query: .init(since: since.flatMap(Output.date), granularity: .day)
        ).ok.body.json
        try output.print(statistics, Self.text)
    }

    /// "active 1,200, invalid 3 (production 1,000, sandbox 200)"
    static func text(_ devices: Components.Schemas.DeviceCounts) -> String {
        let byEnvironment = devices.byEnvironment.additionalProperties.sorted { $0.key < $1.key }
            .map { "\($0.key) \(Output.count($0.value))" }.joined(separator: ", ")
        return "active \(Output.count(devices.active)), invalid \(Output.count(devices.invalid))"
            + (byEnvironment.isEmpty ? "" : " (\(byEnvironment))")
    }

    static func text(_ tags: [Components.Schemas.TagStatistics]) -> String {
        guard !tags.isEmpty else { return "no tags" }
        let width = tags.map(\.tag.count).max() ?? 0
        return tags.map { $0.tag.padding(toLength: width + 2, withPad: " ", startingAt: 0) + text($0.devices) }
            .joined(separator: "\n")
    }

    static func text(_ statistics: Components.Schemas.Statistics) -> String {
        let pushes = statistics.pushes.additionalProperties.sorted { $0.key < $1.key }
            .map { "\($0.key) \(Output.count($0.value))" }.joined(separator: ", ")
        let delivery = PushProgress.Counters(statistics.delivery)
        return [
            "devices   " + text(statistics.devices),
            "pushes    \(pushes.isEmpty ? "none" : pushes)",
            "delivery  targeted \(Output.count(delivery.targeted)), accepted \(Output.count(delivery.accepted)), "
                + "rejected \(Output.count(delivery.rejected))\(PushProgress.reasons(delivery)), "
                + "expired \(Output.count(delivery.expired)), canceled \(Output.count(delivery.canceled))",
        ].joined(separator: "\n") + engagement(statistics.timeline ?? [])
    }

    /// "\nengagement  received 1,800, opened 412 of 2,000 reached (20.6%)"; empty without a timeline.
    static func engagement(_ timeline: [Components.Schemas.StatisticsBucket]) -> String {
        guard !timeline.isEmpty else { return "" }
        let reached = timeline.reduce(0) { $0 + $1.accepted + $1.deliveredOnline }
        let opened = timeline.reduce(0) { $0 + ($1.opened ?? 0) }
        let received = timeline.reduce(0) { $0 + ($1.received ?? 0) }
        return "\nengagement  received \(Output.count(received)), opened \(Output.count(opened)) of "
            + "\(Output.count(reached)) reached (\(PushProgress.percent(reached > 0 ? Double(opened) / Double(reached) : 0)))"
    }
}
