import ArgumentParser
import Foundation
import HeraldAPIContract
import OpenAPIRuntime

/// `herald api`: herald-api's own operations endpoints (no key needed).
struct APICommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "api",
        abstract: "herald-api itself: is it up and ready, and its metrics.",
        subcommands: [APIHealthCommand.self, APIMetricsCommand.self])
}

struct APIHealthCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "health",
        abstract:
            "Whether herald-api is up (/healthz) and ready (/readyz: its database answers); exit 3 when not ready.")

    @OptionGroup var output: OutputOptions

    struct Health: Encodable {
        var up: String
        var ready: String
    }

    func run() async throws {
        let connection = try APIConnection.anonymous(try ClientConfiguration.load())
        let up = try await connection.client.getHealth().ok.body.json.status
        let ready: String
        do {
            ready = try await connection.client.getReadiness().ok.body.json.status
        } catch let error where error.unwrappedFromClient is APIFailure {
            ready = "not ready: \((error.unwrappedFromClient as! APIFailure).message)"
        }
        try output.print(Health(up: up, ready: ready)) { "\(connection.baseURL)  up: \($0.up)  ready: \($0.ready)" }
        if ready != "ready" { throw CLIError("herald-api is not ready", status: .unavailable) }
    }
}

struct APIMetricsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "metrics", abstract: "herald-api's Prometheus metrics, as text.")

    func run() async throws {
        let connection = try APIConnection.anonymous(try ClientConfiguration.load())
        let body = try await connection.client.getMetrics().ok.body.plainText
        print(try await String(collecting: body, upTo: 16 << 20), terminator: "")
    }
}
