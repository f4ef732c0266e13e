import Foundation
import HeraldAPIContract
import HeraldCore
import HeraldStore

/// Webhook endpoints of an app (docs/webhooks.md): the admin token or the app's admin key.
extension APIHandler {
    /// Endpoints per app at most.
    static let webhooksPerApp = 10

    func createWebhook(_ input: Operations.CreateWebhook.Input) async throws -> Operations.CreateWebhook.Output {
        let app = try await existingApp(input.path.appId)
        guard case .json(let body) = input.body else { throw APIError.badRequest("a JSON body is required") }
        try Self.checkWebhookURL(body.url)
        let concurrency = body.maxConcurrency ?? 4
        guard (1...32).contains(concurrency) else {
            throw APIError.invalid("max_concurrency", "max_concurrency is 1 to 32")
        }
        guard !body.eventTypes.isEmpty else {
            throw APIError.invalid("event_types", "name at least one event type")
        }
        if let description = body.description { try Self.checkName(description, field: "description") }
        let cipher = try requireCipher(for: "webhook secrets")
        guard try await webhooks.endpointCount(appID: app.id) < Self.webhooksPerApp else {
            throw APIError.conflict(
                "the app has \(Self.webhooksPerApp) webhook endpoints already; delete one first",
                code: "webhook_limit")
        }
        let id = UUID()
        let secret = "whsec_" + RandomSecret.text()
        let sealed = try cipher.seal(Array(secret.utf8)) {
            WebhookSecret.associatedData(endpointID: id, sealingKeyID: $0)
        }
        let endpoint = try await webhooks.createEndpoint(
            id: id, appID: app.id, url: body.url, description: body.description,
            eventTypes: Array(Set(body.eventTypes.map(\.rawValue))).sorted(), maxConcurrency: concurrency,
            secret: WebhookSecret(sealed: sealed.sealed, sealingKeyID: sealed.keyID))
        await recordAudit(
            "webhook.created", appID: app.id, details: ["webhook": id.uuidString.lowercased(), "url": body.url])
        return .created(.init(body: .json(.init(webhook: .init(endpoint), secret: secret))))
    }

    func listWebhooks(_ input: Operations.ListWebhooks.Input) async throws -> Operations.ListWebhooks.Output {
        let app = try await existingApp(input.path.appId)
        let endpoints = try await webhooks.endpoints(appID: app.id)
        return .ok(.init(body: .json(.init(webhooks: endpoints.map(Components.Schemas.Webhook.init)))))
    }

    func deleteWebhook(_ input: Operations.DeleteWebhook.Input) async throws -> Operations.DeleteWebhook.Output {
        let appID = try Self.uuid(input.path.appId, "appId")
        let id = try Self.uuid(input.path.webhookId, "webhookId")
        guard try await webhooks.deleteEndpoint(id: id, appID: appID) else { throw APIError.notFound("webhook") }
        await recordAudit("webhook.deleted", appID: appID, details: ["webhook": id.uuidString.lowercased()])
        return .noContent(.init())
    }

    func sendTestWebhook(_ input: Operations.SendTestWebhook.Input) async throws -> Operations.SendTestWebhook.Output {
        let appID = try Self.uuid(input.path.appId, "appId")
        let id = try Self.uuid(input.path.webhookId, "webhookId")
        guard let event = try await webhooks.queueTest(endpointID: id, appID: appID) else {
            throw APIError.notFound("webhook")
        }
        return .accepted(.init(body: .json(.init(eventId: event.uuidString.lowercased()))))
    }

    func listWebhookAttempts(_ input: Operations.ListWebhookAttempts.Input) async throws
        -> Operations.ListWebhookAttempts.Output
    {
        let appID = try Self.uuid(input.path.appId, "appId")
        let id = try Self.uuid(input.path.webhookId, "webhookId")
        let limit = try Self.pageSize(input.query.limit)
        guard
            let attempts = try await webhooks.attempts(
                endpointID: id, appID: appID, before: input.query.cursor, limit: limit)
        else { throw APIError.notFound("webhook") }
        return .ok(
            .init(
                body: .json(
                    .init(
                        attempts: attempts.map {
                            .init(
                                id: $0.id, eventId: $0.eventID.uuidString.lowercased(), attemptedAt: $0.attemptedAt,
                                status: $0.status, error: $0.error, durationMs: $0.durationMilliseconds)
                        },
                        nextCursor: attempts.count == limit ? attempts.last?.id : nil))))
    }

    /// https, or http on a loopback address (the dev stack, tests); no credentials in the URL.
    static func checkWebhookURL(_ text: String) throws(APIError) {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased(),
            !host.isEmpty
        else { throw APIError.invalid("url", "url must be an absolute https:// URL") }
        guard url.user == nil, url.password == nil else {
            throw APIError.invalid("url", "url must not carry a user name or password")
        }
        let loopback = host == "localhost" || host == "::1" || host == "[::1]" || host.hasPrefix("127.")
        guard scheme == "https" || (scheme == "http" && loopback) else {
            throw APIError.invalid("url", "url must be https:// (http:// only on a loopback address)")
        }
    }
}

extension Components.Schemas.Webhook {
    init(_ endpoint: WebhookEndpointRecord) {
        self.init(
            id: endpoint.id.uuidString.lowercased(), url: endpoint.url,
            eventTypes: endpoint.eventTypes.compactMap(Components.Schemas.WebhookEventType.init(rawValue:)),
            description: endpoint.description, maxConcurrency: endpoint.maxConcurrency, enabled: endpoint.enabled,
            createdAt: endpoint.createdAt)
    }
}
