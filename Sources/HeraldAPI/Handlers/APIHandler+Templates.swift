import Foundation
import HeraldAPIContract
import HeraldStore

/// Stored notification templates (docs/templates.md): a named notification with placeholders
/// and localized variants that pushes name by `template_id`, for a server key.
extension APIHandler {
    func createTemplate(_ input: Operations.CreateTemplate.Input) async throws -> Operations.CreateTemplate.Output {
        let appID = try Principal.requireApp()
        guard case .json(let body) = input.body else { throw APIError.badRequest("a JSON body is required") }
        try Self.checkNamedText("template", name: body.name, description: body.description)
        let checked = try Self.checkedTemplate(body.notification)
        let id = UUID()
        let template = try await naming(.template) {
            try await templates.create(
                id: id, appID: appID, name: body.name, description: body.description,
                notificationJSON: checked.notificationJSON,
                audit: auditEntry(
                    "template.created", appID: appID, details: ["template": id.lowercased, "name": body.name]))
        }
        return .created(.init(body: .json(try .init(template))))
    }

    func listTemplates(_ input: Operations.ListTemplates.Input) async throws -> Operations.ListTemplates.Output {
        let appID = try Principal.requireApp()
        return .ok(
            .init(body: .json(.init(templates: try await templates.templates(appID: appID).map { try .init($0) }))))
    }

    func getTemplate(_ input: Operations.GetTemplate.Input) async throws -> Operations.GetTemplate.Output {
        let appID = try Principal.requireApp()
        let id = try Self.uuid(input.path.templateId, "templateId")
        guard let template = try await templates.template(id: id, appID: appID) else {
            throw APIError.notFound("template")
        }
        return .ok(.init(body: .json(try .init(template))))
    }

    func updateTemplate(_ input: Operations.UpdateTemplate.Input) async throws -> Operations.UpdateTemplate.Output {
        let appID = try Principal.requireApp()
        let id = try Self.uuid(input.path.templateId, "templateId")
        guard case .json(let body) = input.body else { throw APIError.badRequest("a JSON body is required") }
        guard body.name != nil || body.description != nil || body.notification != nil else {
            throw APIError.badRequest("name what to change: name, description or notification")
        }
        try Self.checkNamedText("template", name: body.name, description: body.description)
        let checked = try body.notification.map { notification throws(APIError) in
            try Self.checkedTemplate(notification)
        }
        guard
            let template = try await naming(
                .template,
                {
                    try await templates.update(
                        id: id, appID: appID, name: body.name, description: body.description,
                        notificationJSON: checked?.notificationJSON,
                        audit: auditEntry(
                            "template.updated", appID: appID,
                            details: Self.changed(id, name: body.name, kind: "template")))
                })
        else { throw APIError.notFound("template") }
        return .ok(.init(body: .json(try .init(template))))
    }

    func deleteTemplate(_ input: Operations.DeleteTemplate.Input) async throws -> Operations.DeleteTemplate.Output {
        let appID = try Principal.requireApp()
        let id = try Self.uuid(input.path.templateId, "templateId")
        guard
            try await templates.delete(
                id: id, appID: appID,
                audit: auditEntry("template.deleted", appID: appID, details: ["template": id.lowercased]))
        else { throw APIError.notFound("template") }
        return .noContent(.init())
    }

    /// A push naming a stored template gets the template's notification, copied now: changing or
    /// deleting the template later changes no accepted push.
    func withTemplate(_ request: Components.Schemas.PushRequest, appID: UUID) async throws
        -> Components.Schemas.PushRequest
    {
        // With a notification (or raw aps) beside it, PushComposer refuses the request.
        guard let text = request.templateId, request.notification == nil, request.aps == nil, request.data == nil
        else { return request }
        let id = try Self.uuid(text, "template_id")
        guard let template = try await templates.template(id: id, appID: appID) else {
            throw APIError.invalid("template_id", "the app has no template \(id.lowercased)")
        }
        var resolved = request
        resolved.templateId = nil
        resolved.notification = try Self.notification(template)
        return resolved
    }

    /// A template's notification checked as a push would be (an alert push's size limit): what it
    /// stores and what it reports.
    static func checkedTemplate(_ notification: Components.Schemas.Notification) throws(APIError) -> (
        notificationJSON: String, composed: PushComposer.Composed
    ) {
        let composed = try PushComposer().compose(.init(audience: .init(all: true), notification: notification))
        return (composed.notificationJSON, composed)
    }

    static func notification(_ template: TemplateRecord) throws -> Components.Schemas.Notification {
        try JSONDecoder().decode(Components.Schemas.Notification.self, from: Data(template.notificationJSON.utf8))
    }
}

extension Components.Schemas.Template {
    init(_ template: TemplateRecord) throws {
        let notification = try APIHandler.notification(template)
        let composed = try APIHandler.checkedTemplate(notification).composed
        self.init(
            id: template.id.lowercased, name: template.name, description: template.description,
            notification: notification, placeholders: composed.personalization?.names ?? [],
            localizations: composed.personalization?.localizations ?? [],
            payloadBytes: composed.sentPayloadBytes,
            createdAt: template.createdAt, updatedAt: template.updatedAt)
    }
}
