import ArgumentParser
import Foundation

/// `herald devices`: an app's device registrations (a server key).
struct DevicesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract: "Import an existing token base; look up devices.",
        subcommands: [DevicesImportCommand.self, DevicesListCommand.self]
    )
}

struct DevicesImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Import device registrations from an NDJSON or CSV file (streamed; see docs/api.md for the columns).")

    @Argument(help: "The file: .ndjson/.jsonl (one registration a line) or .csv (with a header).") var file: String
    @Option(help: "ndjson or csv (default: from the file's extension).") var format: String?

    func run() async throws {
        let client = try APIClient.app(try ClientConfiguration.load())
        let kind = format ?? (file.lowercased().hasSuffix(".csv") ? "csv" : "ndjson")
        guard ["ndjson", "csv"].contains(kind) else { throw ValidationError("--format is ndjson or csv") }
        let started = ContinuousClock.now
        let answer = try await client.upload(
            "/v1/devices/import", file: file,
            contentType: kind == "csv" ? "text/csv" : "application/x-ndjson")
        let seconds = (ContinuousClock.now - started).seconds
        let lines = answer.body["lines"] as? Int ?? 0
        let accepted = answer.body["accepted"] as? Int ?? 0
        let rejected = answer.body["rejected"] as? Int ?? 0
        print(
            "imported \(file): \(lines) lines, \(accepted) accepted, \(rejected) rejected in \(String(format: "%.1f", seconds)) s"
        )
        for error in (answer.body["errors"] as? [[String: Any]] ?? []).prefix(10) {
            print("  line \(error["line"] as? Int ?? 0): \(error["message"] as? String ?? "")")
        }
        if rejected > 10 { print("  … (the first 100 rejected lines are in the API's answer)") }
    }
}

struct DevicesListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List devices, by alias or tag.")

    @Option(help: "Only this alias.") var alias: String?
    @Option(help: "Only this tag.") var tag: String?
    @Option(help: "At most this many.") var limit: Int = 100

    func run() async throws {
        let client = try APIClient.app(try ClientConfiguration.load())
        var query = "limit=\(min(limit, 1000))"
        if let alias {
            query += "&alias=\(alias.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed) ?? alias)"
        }
        if let tag { query += "&tag=\(tag.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed) ?? tag)" }
        let answer = try await client.get("/v1/devices?\(query)")
        for device in answer.body["devices"] as? [[String: Any]] ?? [] {
            let tags = (device["tags"] as? [String] ?? []).joined(separator: ",")
            print(
                "\(device["registration_id"] as? Int ?? 0)  \(device["status"] as? String ?? "?")  "
                    + "\(device["environment"] as? String ?? "?")  \(device["token_prefix"] as? String ?? "")…  "
                    + "alias=\(device["alias"] as? String ?? "-")  tags=\(tags.isEmpty ? "-" : tags)")
        }
    }
}

extension Duration {
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
