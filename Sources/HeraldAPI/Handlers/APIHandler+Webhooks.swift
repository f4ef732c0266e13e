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
        let changes = try Self.webhookChanges(
            url: body.url, eventTypes: body.eventTypes, description: body.description,
            maxConcurrency: body.maxConcurrency)
        let cipher = try requireCipher(for: "webhook secrets")
        let id = UUID()
        let (secret, sealed) = try Self.newWebhookSecret(endpointID: id, cipher: cipher)
        let endpoint = try await naming(.webhook) {
            try await webhooks.createEndpoint(
                id: id, appID: app.id, url: body.url, description: body.description,
                eventTypes: changes.eventTypes ?? [], maxConcurrency: changes.maxConcurrency ?? 4, secret: sealed,
                limit: Self.webhooksPerApp,
                audit: auditEntry(
                    "webhook.created", appID: app.id,
                    details: ["webhook": id.uuidString.lowercased(), "url": Self.auditedURL(body.url)]))
        }
        return .created(.init(body: .json(.init(webhook: .init(endpoint), secret: secret))))
    }

    func updateWebhook(_ input: Operations.UpdateWebhook.Input) async throws -> Operations.UpdateWebhook.Output {
        let appID = try Self.uuid(input.path.appId, "appId")
        let id = try Self.uuid(input.path.webhookId, "webhookId")
        guard case .json(let body) = input.body else { throw APIError.badRequest("a JSON body is required") }
        var changes = try Self.webhookChanges(
            url: body.url, eventTypes: body.eventTypes, description: body.description,
            maxConcurrency: body.maxConcurrency)
        changes.enabled = body.enabled
        guard
            changes.url != nil || changes.eventTypes != nil || changes.description != nil
                || changes.maxConcurrency != nil || changes.enabled != nil
        else {
            throw APIError.badRequest(
                "name what to change: url, event_types, description, max_concurrency or enabled")
        }
        var details = ["webhook": id.uuidString.lowercased()]
        if let url = changes.url { details["url"] = Self.auditedURL(url) }
        if let enabled = changes.enabled { details["enabled"] = "\(enabled)" }
        guard
            let endpoint = try await webhooks.updateEndpoint(
                id: id, appID: appID, changes, audit: auditEntry("webhook.updated", appID: appID, details: details))
        else {
            throw APIError.notFound("webhook")
        }
        return .ok(.init(body: .json(.init(endpoint))))
    }

    func rotateWebhookSecret(_ input: Operations.RotateWebhookSecret.Input) async throws
        -> Operations.RotateWebhookSecret.Output
    {
        let appID = try Self.uuid(input.path.appId, "appId")
        let id = try Self.uuid(input.path.webhookId, "webhookId")
        let grace: Int
        switch input.body {
        case .json(let body)?: grace = try Self.gracePeriod(seconds: body.graceSeconds)
        case nil: grace = 0
        }
        let cipher = try requireCipher(for: "webhook secrets")
        let (secret, sealed) = try Self.newWebhookSecret(endpointID: id, cipher: cipher)
        let previousUntil = grace > 0 ? Date().addingTimeInterval(Double(grace)) : nil
        guard
            let endpoint = try await webhooks.replaceSecret(
                id: id, appID: appID, secret: sealed, previousUntil: previousUntil,
                audit: auditEntry(
                    "webhook.secret_rotated", appID: appID,
                    details: ["webhook": id.uuidString.lowercased(), "grace_seconds": "\(grace)"]))
        else { throw APIError.notFound("webhook") }
        return .ok(
            .init(
                body: .json(
                    .init(webhook: .init(endpoint), secret: secret, previousSecretExpiresAt: previousUntil))))
    }

    func listWebhookDeliveries(_ input: Operations.ListWebhookDeliveries.Input) async throws
        -> Operations.ListWebhookDeliveries.Output
    {
        let appID = try Self.uuid(input.path.appId, "appId")
        let id = try Self.uuid(input.path.webhookId, "webhookId")
        let limit = try Self.pageSize(input.query.limit)
        let after = try input.query.cursor.map { cursor throws(APIError) in try Self.uuid(cursor, "cursor") }
        guard
            let deliveries = try await webhooks.deliveries(
                endpointID: id, appID: appID, state: input.query.state?.rawValue, after: after, limit: limit)
        else { throw APIError.notFound("webhook") }
        return .ok(
            .init(
                body: .json(
                    .init(
                        deliveries: deliveries.map {
                            .init(
                                eventId: $0.eventID.uuidString.lowercased(), _type: $0.type, createdAt: $0.createdAt,
                                state: .init(rawValue: $0.state) ?? .pending, attempts: $0.attempts,
                                nextAttemptAt: $0.nextAttemptAt, finishedAt: $0.finishedAt)
                        },
                        nextCursor: deliveries.count == limit
                            ? deliveries.last?.eventID.uuidString.lowercased() : nil))))
    }

    /// Dead deliveries replayed a call at most, when no event ids are named.
    static let replayBatch = 10_000

    func replayWebhookDeliveries(_ input: Operations.ReplayWebhookDeliveries.Input) async throws
        -> Operations.ReplayWebhookDeliveries.Output
    {
        let appID = try Self.uuid(input.path.appId, "appId")
        let id = try Self.uuid(input.path.webhookId, "webhookId")
        var events: [UUID]?
        if case .json(let body)? = input.body, let ids = body.eventIds {
            guard (1...1000).contains(ids.count) else {
                throw APIError.invalid("event_ids", "name 1 to 1000 event ids, or none to replay every dead delivery")
            }
            events = try ids.map { text throws(APIError) in try Self.uuid(text, "event_ids") }
        }
        guard
            let replayed = try await webhooks.replayDead(
                endpointID: id, appID: appID, eventIDs: events, limit: events?.count ?? Self.replayBatch,
                audit: auditEntry("webhook.replayed", appID: appID, details: ["webhook": id.uuidString.lowercased()]))
        else { throw APIError.notFound("webhook") }
        return .ok(.init(body: .json(.init(replayed: replayed))))
    }

    /// A new signing secret for the endpoint `endpointID`: its text (shown once) and as stored.
    static func newWebhookSecret(endpointID: UUID, cipher: CredentialCipher) throws -> (String, WebhookSecret) {
        let secret = "whsec_" + RandomSecret.text()
        let sealed = try cipher.seal(Array(secret.utf8)) {
            WebhookSecret.associatedData(endpointID: endpointID, sealingKeyID: $0)
        }
        return (secret, WebhookSecret(sealed: sealed.sealed, sealingKeyID: sealed.keyID))
    }

    /// Checks what a creation or an update sets, and returns it as stored (event types sorted,
    /// without repeats).
    static func webhookChanges(
        url: String?, eventTypes: [Components.Schemas.WebhookEventType]?, description: String?, maxConcurrency: Int?
    ) throws(APIError) -> WebhookRepository.EndpointChanges {
        if let url { try checkWebhookURL(url) }
        if let maxConcurrency, !(1...32).contains(maxConcurrency) {
            throw APIError.invalid("max_concurrency", "max_concurrency is 1 to 32")
        }
        if let eventTypes, eventTypes.isEmpty {
            throw APIError.invalid("event_types", "name at least one event type")
        }
        if let description { try checkName(description, field: "description") }
        return WebhookRepository.EndpointChanges(
            url: url, description: description, eventTypes: eventTypes.map { Set($0.map(\.rawValue)).sorted() },
            maxConcurrency: maxConcurrency)
    }

    func listWebhooks(_ input: Operations.ListWebhooks.Input) async throws -> Operations.ListWebhooks.Output {
        let app = try await existingApp(input.path.appId)
        let endpoints = try await webhooks.endpoints(appID: app.id)
        return .ok(.init(body: .json(.init(webhooks: endpoints.map(Components.Schemas.Webhook.init)))))
    }

    func deleteWebhook(_ input: Operations.DeleteWebhook.Input) async throws -> Operations.DeleteWebhook.Output {
        let appID = try Self.uuid(input.path.appId, "appId")
        let id = try Self.uuid(input.path.webhookId, "webhookId")
        guard
            try await webhooks.deleteEndpoint(
                id: id, appID: appID,
                audit: auditEntry("webhook.deleted", appID: appID, details: ["webhook": id.uuidString.lowercased()]))
        else { throw APIError.notFound("webhook") }
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
        if NetworkAddress.isNonCanonicalNumericHost(host) {
            throw APIError.invalid(
                "url",
                "\(host) is an address in a form resolvers read differently (octal, hexadecimal or shortened); write it as a.b.c.d or use a name"
            )
        }
        let loopback = NetworkAddress.isLoopback(host)
        guard scheme == "https" || (scheme == "http" && loopback) else {
            throw APIError.invalid("url", "url must be https:// (http:// only on a loopback address)")
        }
        if scheme == "https", NetworkAddress.isIPAddress(host), !NetworkAddress.isPublic(host) {
            throw APIError.invalid(
                "url", "\(host) is not a public address: herald-center sends webhooks to public addresses only")
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

extension APIHandler {
    /// A webhook URL as the audit log keeps it: without its query and fragment, where receivers
    /// often carry a token (`?token=…`); the scheme, host, port and path say which endpoint.
    static func auditedURL(_ url: String) -> String {
        guard var components = URLComponents(string: url) else { return "(not a URL)" }
        if components.query != nil { components.query = "redacted" }
        components.fragment = nil
        return components.string ?? "(not a URL)"
    }
}
