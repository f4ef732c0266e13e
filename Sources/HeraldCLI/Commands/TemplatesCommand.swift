import ArgumentParser
import Foundation
import HeraldAPIContract

/// `herald templates`: the app's stored notification templates — placeholders and localized
/// texts that pushes name with `--template ID` (docs/templates.md; the app's server key).
struct TemplatesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "templates",
        abstract: "Stored notifications with placeholders and texts per language, that pushes name (--template ID).",
        subcommands: [
            TemplatesCreateCommand.self, TemplatesListCommand.self, TemplatesGetCommand.self,
            TemplatesUpdateCommand.self, TemplatesDeleteCommand.self,
        ],
        defaultSubcommand: TemplatesListCommand.self)
}

extension Components.Schemas.Template {
    var line: String {
        var line = "\(id)  \(name)  \(payloadBytes) bytes"
        if !placeholders.isEmpty { line += "  " + placeholders.map { "{{\($0)}}" }.joined(separator: " ") }
        if !localizations.isEmpty { line += "  [" + localizations.joined(separator: " ") + "]" }
        return line + (description.map { "  — \($0)" } ?? "")
    }
}

/// The notification of `herald templates create|update`: the notification flags, or a JSON file.
struct TemplateNotificationOptions: ParsableArguments {
    @OptionGroup var notification: NotificationOptions
    @Option(
        name: .customLong("notification-file"),
        help: "A file with the whole notification as JSON (docs/api.md), instead of the flags.")
    var file: String?

    func validate() throws {
        if file != nil, !notification.isEmpty {
            throw ValidationError("give --notification-file or the notification flags, not both")
        }
    }

    /// The notification given, or nil when none was.
    func given() throws -> Components.Schemas.Notification? {
        if let file {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw CLIError("--notification-file \(file): cannot read the file", status: .usage)
            }
            do {
                return try JSONDecoder().decode(Components.Schemas.Notification.self, from: data)
            } catch {
                throw CLIError(
                    "--notification-file \(file): not a notification (\(error)); see docs/api.md", status: .usage)
            }
        }
        return notification.isEmpty ? nil : try notification.notification()
    }
}

struct TemplatesCreateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create", abstract: "Store a template; `herald push --template ID` sends it.")

    @Option(help: "Its name, unique in the app.") var name: String
    @Option(help: "What it is for.") var description: String?
    @OptionGroup var notification: TemplateNotificationOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        guard let given = try notification.given() else {
            throw ValidationError(
                "what does it say? give --title/--body (and --localized-title …) or --notification-file")
        }
        let template = try await APIConnection.app(try ClientConfiguration.load()).client.createTemplate(
            body: .json(.init(name: name, description: description, notification: given))
        ).created.body.json
        try output.print(template) { "template \($0.line)" }
    }
}

struct TemplatesListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "The app's templates, by name.")

    @OptionGroup var output: OutputOptions

    func run() async throws {
        let list = try await APIConnection.app(try ClientConfiguration.load()).client.listTemplates().ok.body.json
        try output.print(list) { $0.templates.map(\.line).joined(separator: "\n") }
    }
}

struct TemplatesGetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get", abstract: "One template, with its notification.")

    @Argument(help: "The template's id.") var id: String
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let template = try await APIConnection.app(try ClientConfiguration.load()).client.getTemplate(
            path: .init(templateId: id)
        ).ok.body.json
        try output.print(template) { template in
            "template \(template.line)\n" + ((try? Output.json(template.notification, pretty: true)) ?? "{}")
        }
    }
}

struct TemplatesUpdateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "update",
        abstract: "Rename a template or replace its notification (accepted pushes keep theirs).")

    @Argument(help: "The template's id.") var id: String
    @Option(help: "A new name.") var name: String?
    @Option(help: "A new description.") var description: String?
    @OptionGroup var notification: TemplateNotificationOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let template = try await APIConnection.app(try ClientConfiguration.load()).client.updateTemplate(
            path: .init(templateId: id),
            body: .json(.init(name: name, description: description, notification: try notification.given()))
        ).ok.body.json
        try output.print(template) { "template \($0.line)" }
    }
}

struct TemplatesDeleteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Delete a template (accepted pushes keep its notification).")

    @Argument(help: "The template's id.") var id: String

    func run() async throws {
        _ = try await APIConnection.app(try ClientConfiguration.load()).client.deleteTemplate(
            path: .init(templateId: id)
        ).noContent
        print("template \(id) deleted")
    }
}
