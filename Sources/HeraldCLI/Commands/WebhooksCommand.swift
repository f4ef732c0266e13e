import ArgumentParser
import Foundation
import HeraldAPIContract

/// `herald webhooks`: an app's outcome webhook endpoints, their deliveries and attempts
/// (docs/webhooks.md; the admin token, or the app's admin key, in `HERALD_ADMIN_TOKEN`).
struct WebhooksCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webhooks",
        abstract:
            "An app's webhook endpoints: create, list, update, delete, test, rotate-secret, attempts, deliveries, replay.",
        subcommands: [
            WebhooksCreateCommand.self, WebhooksListCommand.self, WebhooksUpdateCommand.self,
            WebhooksDeleteCommand.self, WebhooksTestCommand.self, WebhooksRotateSecretCommand.self,
            WebhooksAttemptsCommand.self, WebhooksDeliveriesCommand.self, WebhooksReplayCommand.self,
        ],
        defaultSubcommand: WebhooksListCommand.self)
}

extension Components.Schemas.WebhookEventType: ExpressibleByArgument {}
extension Components.Schemas.WebhookDeliveryState: ExpressibleByArgument {}

extension Components.Schemas.Webhook {
    var line: String {
        var text = "\(id)  \(url)  \(eventTypes.map(\.rawValue).joined(separator: ","))"
        text += "  ≤\(maxConcurrency) at once" + (enabled ? "" : "  DISABLED")
        if let description { text += "  \(description)" }
        return text
    }
}

/// Event types as `--events push.completed,device.invalidated`.
struct WebhookEventTypes: ExpressibleByArgument {
    var types: [Components.Schemas.WebhookEventType]

    init?(argument: String) {
        var types: [Components.Schemas.WebhookEventType] = []
        for name in argument.split(separator: ",") {
            guard let type = Components.Schemas.WebhookEventType(rawValue: name.trimmingCharacters(in: .whitespaces))
            else { return nil }
            types.append(type)
        }
        guard !types.isEmpty else { return nil }
        self.types = types
    }

    static var allValueStrings: [String] { Components.Schemas.WebhookEventType.allCases.map(\.rawValue) }
}

/// `--app ID` and the webhook's id.
struct WebhookTarget: ParsableArguments {
    @OptionGroup var app: AppOption
    @Argument(help: "The webhook endpoint's id.") var webhookID: String
}

struct WebhooksCreateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create", abstract: "Register an endpoint; prints its signing secret (shown once).")

    @OptionGroup var app: AppOption
    @Option(help: "Where to POST events: https://…, or http:// on a loopback address.") var url: String
    @Option(help: "Comma-separated event types: \(WebhookEventTypes.allValueStrings.joined(separator: ", ")).")
    var events: WebhookEventTypes
    @Option(help: "Requests in flight to it at most, 1 to 32 (default 4).") var maxConcurrency: Int?
    @Option(help: "What the endpoint is, for the people reading the list.") var description: String?
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let configuration = try ClientConfiguration.load()
        let created = try await APIConnection.admin(configuration).client.createWebhook(
            path: .init(appId: try app.resolve(configuration)),
            body: .json(
                .init(
                    url: url, eventTypes: events.types, description: description, maxConcurrency: maxConcurrency))
        ).created.body.json
        try output.print(created) {
            "webhook \($0.webhook.line)\n  secret  \($0.secret)   ← verifies Herald-Signature; shown this once"
        }
    }
}

struct WebhooksListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "The app's endpoints.")

    @OptionGroup var app: AppOption
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let configuration = try ClientConfiguration.load()
        let list = try await APIConnection.admin(configuration).client.listWebhooks(
            path: .init(appId: try app.resolve(configuration))
        ).ok.body.json
        try output.print(list) { $0.webhooks.map(\.line).joined(separator: "\n") }
    }
}

struct WebhooksUpdateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "update",
        abstract: "Change an endpoint's URL, event types, concurrency or description, or turn it on or off.")

    @OptionGroup var target: WebhookTarget
    @Option(help: "A new URL.") var url: String?
    @Option(help: "The event types it gets from now on (comma-separated).") var events: WebhookEventTypes?
    @Option(help: "Requests in flight to it at most, 1 to 32.") var maxConcurrency: Int?
    @Option(help: "A new description.") var description: String?
    @Option(help: "off: no new events, pending ones wait; on: they go out again.") var enabled: Switch?
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let configuration = try ClientConfiguration.load()
        let webhook = try await APIConnection.admin(configuration).client.updateWebhook(
            path: .init(appId: try target.app.resolve(configuration), webhookId: target.webhookID),
            body: .json(
                .init(
                    url: url, eventTypes: events?.types, description: description, maxConcurrency: maxConcurrency,
                    enabled: enabled?.isOn))
        ).ok.body.json
        try output.print(webhook) { "webhook \($0.line)" }
    }
}

struct WebhooksDeleteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Remove an endpoint with its pending deliveries.")

    @OptionGroup var target: WebhookTarget

    func run() async throws {
        let configuration = try ClientConfiguration.load()
        _ = try await APIConnection.admin(configuration).client.deleteWebhook(
            path: .init(appId: try target.app.resolve(configuration), webhookId: target.webhookID)
        ).noContent
        print("webhook \(target.webhookID) deleted")
    }
}

struct WebhooksTestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "test",
        abstract: "Queue a webhook.test event for the endpoint; see `attempts` for what came of it.")

    @OptionGroup var target: WebhookTarget
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let configuration = try ClientConfiguration.load()
        let queued = try await APIConnection.admin(configuration).client.sendTestWebhook(
            path: .init(appId: try target.app.resolve(configuration), webhookId: target.webhookID)
        ).accepted.body.json
        try output.print(queued) { "webhook.test event \($0.eventId) queued" }
    }
}

struct WebhooksRotateSecretCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rotate-secret",
        abstract: "Give the endpoint a new signing secret (shown once); the old one signs too for --grace seconds.")

    @OptionGroup var target: WebhookTarget
    @Option(name: .customLong("grace"), help: "Seconds the old secret keeps signing beside the new one (default 0).")
    var graceSeconds: Int?
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let configuration = try ClientConfiguration.load()
        let rotated = try await APIConnection.admin(configuration).client.rotateWebhookSecret(
            path: .init(appId: try target.app.resolve(configuration), webhookId: target.webhookID),
            body: .json(.init(graceSeconds: graceSeconds))
        ).ok.body.json
        try output.print(rotated) { rotated in
            var text = "secret  \(rotated.secret)   ← shown this once"
            if let until = rotated.previousSecretExpiresAt {
                text += "\n  the old secret signs too until \(Output.time(until))"
            }
            return text
        }
    }
}

struct WebhooksAttemptsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attempts", abstract: "The endpoint's delivery attempts, newest first.")

    @OptionGroup var target: WebhookTarget
    @Option(help: "At most this many (default 50).") var limit = 50
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let configuration = try ClientConfiguration.load()
        let page = try await APIConnection.admin(configuration).client.listWebhookAttempts(
            path: .init(appId: try target.app.resolve(configuration), webhookId: target.webhookID),
            query: .init(limit: limit)
        ).ok.body.json
        try output.print(page) { page in
            page.attempts.map {
                "\(Output.time($0.attemptedAt))  event \($0.eventId)  "
                    + ($0.status.map { "HTTP \($0)" } ?? "no answer: \($0.error ?? "?")") + "  \($0.durationMs) ms"
            }.joined(separator: "\n")
        }
    }
}

struct WebhooksDeliveriesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "deliveries",
        abstract: "The endpoint's deliveries, newest event first (--state dead: the dead ones).")

    @OptionGroup var target: WebhookTarget
    @Option(help: "pending, delivered or dead (default: all).") var state: Components.Schemas.WebhookDeliveryState?
    @Option(help: "At most this many (default 100).") var limit = 100
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let configuration = try ClientConfiguration.load()
        let page = try await APIConnection.admin(configuration).client.listWebhookDeliveries(
            path: .init(appId: try target.app.resolve(configuration), webhookId: target.webhookID),
            query: .init(state: state, limit: limit)
        ).ok.body.json
        try output.print(page) { page in
            page.deliveries.map {
                var text = "\($0.eventId)  \($0._type)  \(Output.time($0.createdAt))  \($0.state.rawValue)"
                text += "  \($0.attempts) attempt(s)"
                if let next = $0.nextAttemptAt { text += "  next \(Output.time(next))" }
                return text
            }.joined(separator: "\n")
        }
    }
}

struct WebhooksReplayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Send dead deliveries again: those of the events named, or every dead one of the endpoint.")

    @OptionGroup var target: WebhookTarget
    @Option(name: .customLong("event"), help: "An event id to replay (repeatable; default: every dead delivery).")
    var events: [String] = []
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let configuration = try ClientConfiguration.load()
        let client = try APIConnection.admin(configuration).client
        let path = Operations.ReplayWebhookDeliveries.Input.Path(
            appId: try target.app.resolve(configuration), webhookId: target.webhookID)
        var total = 0
        if events.isEmpty {
            // The API replays 10,000 a call: go on until a call replays fewer.
            var replayed = 0
            repeat {
                replayed = try await client.replayWebhookDeliveries(path: path, body: nil).ok.body.json.replayed
                total += replayed
            } while replayed >= 10_000
        } else {
            total = try await client.replayWebhookDeliveries(path: path, body: .json(.init(eventIds: events)))
                .ok.body.json.replayed
        }
        try output.print(Components.Schemas.WebhookReplayed(replayed: total)) {
            "\($0.replayed) deliveries pending again"
        }
    }
}
