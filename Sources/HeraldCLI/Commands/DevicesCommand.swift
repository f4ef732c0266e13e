import ArgumentParser
import AsyncHTTPClient
import Foundation
import HeraldAPIContract
import HeraldTiming
import OpenAPIRuntime

/// `herald devices`: an app's device registrations (a server key).
struct DevicesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract: "Import an existing token base; register, look up, change and delete devices.",
        subcommands: [
            DevicesImportCommand.self, DevicesListCommand.self, DevicesGetCommand.self, DevicesRegisterCommand.self,
            DevicesUpdateCommand.self, DevicesDeleteCommand.self,
        ]
    )
}

extension Components.Schemas.Device {
    var line: String {
        let tagList = tags.joined(separator: ",")
        var text = "\(registrationId)  \(status.rawValue)  \(environment.rawValue)  \(tokenPrefix ?? "")…  "
        text += "alias=\(alias ?? "-")  tags=\(tagList.isEmpty ? "-" : tagList)"
        if let invalidReason { text += "  (\(invalidReason))" }
        return text
    }
}

struct DevicesImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Import device registrations from an NDJSON or CSV file (streamed; see docs/api.md for the columns).")

    @Argument(help: "The file: .ndjson/.jsonl (one registration a line) or .csv (with a header).") var file: String
    @Option(help: "ndjson or csv (default: from the file's extension).") var format: String?
    @OptionGroup var output: OutputOptions

    func validate() throws {
        if let format, !["ndjson", "csv"].contains(format) { throw ValidationError("--format is ndjson or csv") }
    }

    /// How long an import may take, upload and merge: herald-api answers only once the database
    /// has merged the file, and bounds the upload and COPY at 30 minutes and each merge statement
    /// at 10 (docs/limits.md), so an hour covers it with room.
    static let importTimeout: Duration = .seconds(3600)

    func run() async throws {
        // A client of its own: the shared one's 90-second read timeout gave up on a 2,000,000-line
        // import while herald-api was still merging it (make bench-scale-10m, 2026-11-30). The
        // request's deadline (`importTimeout`) is the bound; the read timeout must only not be
        // shorter.
        let httpClient = HTTPClient(
            eventLoopGroupProvider: .singleton,
            configuration: .init(
                timeout: .init(connect: .seconds(10), read: .seconds(Self.importTimeout.components.seconds))))
        do {
            try await upload(through: httpClient)
        } catch {
            try? await httpClient.shutdown()
            throw error
        }
        // The import is done and reported; a client that fails to close changes nothing of it.
        try? await httpClient.shutdown()
    }

    private func upload(through httpClient: HTTPClient) async throws {
        let client = try APIConnection.app(
            try ClientConfiguration.load(), timeout: Self.importTimeout, httpClient: httpClient
        ).client
        let csv = (format ?? (file.lowercased().hasSuffix(".csv") ? "csv" : "ndjson")) == "csv"
        let body = try FileUpload.body(of: file)
        let started = ContinuousClock.now
        let result = try await client.importDevices(body: csv ? .csv(body) : .applicationXNdjson(body)).ok.body.json
        let elapsed = ContinuousClock.now - started
        try output.print(result) { result in
            var lines = [
                "imported \(file): \(result.lines) lines, \(result.accepted) accepted, \(result.rejected) rejected in "
                    + String(format: "%.1f s", elapsed.fractionalSeconds)
            ]
            for error in result.errors.prefix(10) { lines.append("  line \(error.line): \(error.message)") }
            if result.rejected > 10 { lines.append("  … (the first 100 rejected lines are in --json)") }
            return lines.joined(separator: "\n")
        }
    }
}

/// A file as a request body, read a megabyte at a time as the request asks for more (never
/// whole in memory).
enum FileUpload {
    static func body(of path: String) throws -> HTTPBody {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
            let size = attributes[.size] as? Int
        else { throw CLIError("cannot read \(path): no such file") }
        guard let handle = FileHandle(forReadingAtPath: path) else { throw CLIError("cannot open \(path)") }
        return HTTPBody(Chunks(handle: handle), length: .known(Int64(size)), iterationBehavior: .single)
    }

    struct Chunks: AsyncSequence, @unchecked Sendable {  // the handle is read by one iterator only
        typealias Element = ArraySlice<UInt8>
        let handle: FileHandle

        struct AsyncIterator: AsyncIteratorProtocol {
            let handle: FileHandle
            mutating func next() async throws -> ArraySlice<UInt8>? {
                let data = handle.readData(ofLength: 1 << 20)
                if data.isEmpty {
                    try? handle.close()
                    return nil
                }
                return ArraySlice(data)
            }
        }

        func makeAsyncIterator() -> AsyncIterator { AsyncIterator(handle: handle) }
    }
}

struct DevicesListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List devices, by alias or tag.")

    @Option(help: "Only this alias.") var alias: String?
    @Option(help: "Only this tag.") var tag: String?
    @Option(help: "At most this many (every one with --all).") var limit: Int = 100
    @Flag(help: "Every device, page after page.") var all = false
    @OptionGroup var output: OutputOptions

    func validate() throws {
        if limit < 1 { throw ValidationError("--limit is at least 1") }
    }

    func run() async throws {
        let client = try APIConnection.app(try ClientConfiguration.load()).client
        func page(_ cursor: Int64?, size: Int) async throws -> ([Components.Schemas.Device], Int64?) {
            let page = try await client.listDevices(query: .init(alias: alias, tag: tag, cursor: cursor, limit: size))
                .ok.body.json
            return (page.devices, page.nextCursor)
        }
        let devices =
            all
            ? try await APIConnection.everyItem { try await page($0, size: 1000) }
            : try await page(nil, size: min(limit, 1000)).0
        try output.print(devices) { $0.map(\.line).joined(separator: "\n") }
    }
}

struct DevicesGetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "get", abstract: "Show one device.")

    @Argument(help: "The registration id.") var registrationID: Int64
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let client = try APIConnection.app(try ClientConfiguration.load()).client
        let device = try await client.getDevice(path: .init(registrationId: registrationID)).ok.body.json
        try output.print(device) { device in
            "\(device.line)\n  topic \(device.topic), locale \(device.locale ?? "-"), time zone \(device.timeZone ?? "-")\n"
                + "  registered \(Output.time(device.registeredAt)), updated \(Output.time(device.updatedAt))"
        }
    }
}

struct DevicesRegisterCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "register", abstract: "Register a device token (as an app's SDK does), or refresh one.")

    @Argument(help: "The APNs device token, hexadecimal.") var token: String
    @Option(help: "sandbox or production.") var environment: Components.Schemas.Environment
    @Option(help: "The user the device belongs to.") var alias: String?
    @Option(help: "A tag (repeatable).") var tag: [String] = []
    @Option(help: "The device's locale, e.g. de_DE.") var locale: String?
    @Option(name: .customLong("time-zone"), help: "The device's time zone, e.g. Europe/Berlin.") var timeZone: String?
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let client = try APIConnection.app(try ClientConfiguration.load()).client
        let registration = Components.Schemas.DeviceRegistration(
            token: token, environment: environment, alias: alias, tags: tag.isEmpty ? nil : tag, locale: locale,
            timeZone: timeZone)
        let device: Components.Schemas.Device
        switch try await client.registerDevice(body: .json(registration)) {
        case .created(let created): device = try created.body.json
        case .ok(let refreshed): device = try refreshed.body.json
        default: throw CLIError("herald-api gave an answer the contract does not list")
        }
        try output.print(device) { "registered \($0.line)" }
    }
}

struct DevicesUpdateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "update", abstract: "Change a device's alias or tags.")

    @Argument(help: "The registration id.") var registrationID: Int64
    @Option(help: "The new alias (an empty string removes it).") var alias: String?
    @Option(name: .customLong("add-tag"), help: "A tag to add (repeatable).") var addTags: [String] = []
    @Option(name: .customLong("remove-tag"), help: "A tag to remove (repeatable).") var removeTags: [String] = []
    @OptionGroup var output: OutputOptions

    func validate() throws {
        if alias == nil, addTags.isEmpty, removeTags.isEmpty {
            throw ValidationError("give --alias, --add-tag or --remove-tag")
        }
    }

    func run() async throws {
        let client = try APIConnection.app(try ClientConfiguration.load()).client
        let update = Components.Schemas.DeviceUpdate(
            alias: alias, addTags: addTags.isEmpty ? nil : addTags, removeTags: removeTags.isEmpty ? nil : removeTags)
        let device = try await client.updateDevice(path: .init(registrationId: registrationID), body: .json(update))
            .ok.body.json
        try output.print(device) { "updated \($0.line)" }
    }
}

struct DevicesDeleteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "delete", abstract: "Delete a device registration.")

    @Argument(help: "The registration id.") var registrationID: Int64

    func run() async throws {
        let client = try APIConnection.app(try ClientConfiguration.load()).client
        _ = try await client.deleteDevice(path: .init(registrationId: registrationID)).noContent
        print("deleted device \(registrationID)")
    }
}
