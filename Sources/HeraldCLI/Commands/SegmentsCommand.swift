import ArgumentParser
import Foundation
import HeraldAPIContract
import OpenAPIRuntime

/// `herald segments`: the app's saved segments, named filters over device attributes
/// (docs/segments.md; the app's server key).
struct SegmentsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "segments",
        abstract: "Saved segments: filters over device attributes that pushes name (--segment ID).",
        subcommands: [
            SegmentsCreateCommand.self, SegmentsListCommand.self, SegmentsGetCommand.self, SegmentsUpdateCommand.self,
            SegmentsDeleteCommand.self,
        ],
        defaultSubcommand: SegmentsListCommand.self)
}

extension Components.Schemas.Segment {
    var line: String {
        "\(id)  \(name)  \((try? Output.json(filter, pretty: false)) ?? "{}")" + (description.map { "  — \($0)" } ?? "")
    }
}

/// A `--filter` argument: a JSON object.
struct SegmentFilter: ExpressibleByArgument {
    var filter: Components.Schemas.DeviceFilter

    init?(argument: String) {
        guard let object = PushRequestOptions.object(argument) else { return nil }
        filter = .init(additionalProperties: object)
    }
}

struct SegmentsCreateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create", abstract: "Save a segment; `herald push validate --segment ID` tells its size.")

    @Option(help: "Its name, unique in the app.") var name: String
    @Option(help: #"The filter (JSON), e.g. '{"attribute":"last_seen","op":"within","value":"30d"}'."#)
    var filter: SegmentFilter
    @Option(help: "What it is for.") var description: String?
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let segment = try await APIConnection.app(try ClientConfiguration.load()).client.createSegment(
            body: .json(.init(name: name, description: description, filter: filter.filter))
        ).created.body.json
        try output.print(segment) { "segment \($0.line)" }
    }
}

struct SegmentsListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "The app's segments, by name.")

    @OptionGroup var output: OutputOptions

    func run() async throws {
        let list = try await APIConnection.app(try ClientConfiguration.load()).client.listSegments().ok.body.json
        try output.print(list) { $0.segments.map(\.line).joined(separator: "\n") }
    }
}

struct SegmentsGetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "get", abstract: "One segment.")

    @Argument(help: "The segment's id.") var id: String
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let segment = try await APIConnection.app(try ClientConfiguration.load()).client.getSegment(
            path: .init(segmentId: id)
        ).ok.body.json
        try output.print(segment) { "segment \($0.line)" }
    }
}

struct SegmentsUpdateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "update", abstract: "Rename a segment or change its filter (accepted pushes keep theirs).")

    @Argument(help: "The segment's id.") var id: String
    @Option(help: "A new name.") var name: String?
    @Option(help: "A new filter (JSON).") var filter: SegmentFilter?
    @Option(help: "A new description.") var description: String?
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let segment = try await APIConnection.app(try ClientConfiguration.load()).client.updateSegment(
            path: .init(segmentId: id), body: .json(.init(name: name, description: description, filter: filter?.filter))
        ).ok.body.json
        try output.print(segment) { "segment \($0.line)" }
    }
}

struct SegmentsDeleteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Delete a segment (accepted pushes keep its filter).")

    @Argument(help: "The segment's id.") var id: String

    func run() async throws {
        _ = try await APIConnection.app(try ClientConfiguration.load()).client.deleteSegment(
            path: .init(segmentId: id)
        ).noContent
        print("segment \(id) deleted")
    }
}
