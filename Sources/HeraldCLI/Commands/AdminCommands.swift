import ArgumentParser
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `herald dev`, `herald migrate`, `herald kafka` and `herald credentials`: the server-side tools
/// live in `herald-admin`, which links PostgreSQL's libpq, librdkafka and nghttp2; the operator's
/// `herald` links none of them and hands these commands, arguments and all, to `herald-admin`
/// (installed next to it, or on the PATH), which takes the process over.
enum AdminTool {
    /// The executable's name.
    static let name = "herald-admin"

    /// `herald-admin` beside the running `herald` (the same build or install directory), else the
    /// first on the PATH.
    static func locate() -> String? {
        var candidates: [String] = []
        if let executable = Bundle.main.executablePath {
            let directory = URL(fileURLWithPath: executable).resolvingSymlinksInPath().deletingLastPathComponent()
            candidates.append(directory.appendingPathComponent(name).path)
        }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        candidates += path.split(separator: ":").map { "\($0)/\(name)" }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Replaces this process with `herald-admin arguments…`; returns only by throwing.
    static func run(_ arguments: [String]) throws -> Never {
        guard let path = locate() else {
            throw CLIError(
                "herald \(arguments.first ?? "") is herald-admin's, and no herald-admin was found next to herald or on the PATH: build it (swift build --product herald-admin) or install it beside herald"
            )
        }
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        execv(path, argv)
        let reason = String(cString: strerror(errno))
        for pointer in argv { free(pointer) }
        throw CLIError("cannot run \(path): \(reason)")
    }
}

/// `herald dev …`: the local stack (herald-admin).
struct AdminDevCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dev",
        abstract: "The local development stack: up, down, status, env, devices, verify, … (runs herald-admin dev).")
    @Argument(parsing: .captureForPassthrough, help: "herald-admin dev's subcommand and options.")
    var arguments: [String] = []
    func run() throws { try AdminTool.run(["dev"] + arguments) }
}

/// `herald migrate …` (herald-admin).
struct AdminMigrateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate", abstract: "Apply the database migrations (runs herald-admin migrate).")
    @Argument(parsing: .captureForPassthrough, help: "herald-admin migrate's options.")
    var arguments: [String] = []
    func run() throws { try AdminTool.run(["migrate"] + arguments) }
}

/// `herald kafka …` (herald-admin).
struct AdminKafkaCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "kafka",
        abstract: "Kafka diagnostics: topics, produce, consume, dead letters (runs herald-admin kafka).")
    @Argument(parsing: .captureForPassthrough, help: "herald-admin kafka's subcommand and options.")
    var arguments: [String] = []
    func run() throws { try AdminTool.run(["kafka"] + arguments) }
}

/// `herald credentials …` (herald-admin).
struct AdminCredentialsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "credentials",
        abstract: "Stored APNs credentials under the master keys (runs herald-admin credentials).")
    @Argument(parsing: .captureForPassthrough, help: "herald-admin credentials' subcommand and options.")
    var arguments: [String] = []
    func run() throws { try AdminTool.run(["credentials"] + arguments) }
}
