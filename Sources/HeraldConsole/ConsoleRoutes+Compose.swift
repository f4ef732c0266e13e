import Foundation
import HTTPTypes
import HeraldAPIContract
import Hummingbird

/// The compose page: the form, its dry run (the Open API's validate operation) and sending it
/// (create, with an Idempotency-Key carried by the form, so a double click or a re-sent form
/// creates one push).
extension ConsoleRoutes {
    struct ComposePage {
        struct Choice {
            var value: String
            var label: String
            /// For radio buttons and options alike (stored: Mustache sees stored properties).
            var checked: Bool
            var selected: Bool

            init(value: String, label: String, checked: Bool) {
                self.value = value
                self.label = label
                self.checked = checked
                selected = checked
            }
        }

        struct Check {
            var ok: Bool
            var error: String?
            var size: String?
            var bytes: String?
            /// `transactional` or `campaign`: what the API decided.
            var priorityClass: String?
            var warnings: [String]
            /// A push at a local time (or holding quiet hours): when each group of time zones gets it.
            var waves: [PushView.Wave] = []
            var hasWaves = false
        }

        var chrome: Chrome
        var form: PushForm
        var idempotencyKey: String
        var audiences: [Choice]
        var environments: [Choice]
        var throttles: [Choice]
        var priorityClasses: [Choice]
        var quietHoursModes: [Choice]
        var channels: [Choice]
        var audienceIs: [String: Bool]
        var throttleIs: [String: Bool]
        var silent: Bool
        var skipUnauthorized: Bool
        /// Problems by form field name.
        var invalid: [String: String]
        var check: Check?

        init(
            chrome: Chrome, form: PushForm, idempotencyKey: String, invalid: [String: String] = [:], check: Check? = nil
        ) {
            self.chrome = chrome
            self.form = form
            self.idempotencyKey = idempotencyKey
            let audience = form.audience ?? "all"
            audiences = [("all", "Everyone"), ("tags", "Tags"), ("aliases", "Aliases"), ("ids", "Registration ids")].map
            {
                Choice(value: $0.0, label: $0.1, checked: $0.0 == audience)
            }
            environments = [
                ("", "Production and sandbox"), ("production", "Production only"), ("sandbox", "Sandbox only"),
            ]
            .map { Choice(value: $0.0, label: $0.1, checked: $0.0 == (form.environment ?? "")) }
            let throttle = form.throttle ?? "none"
            throttles = [
                ("none", "As fast as possible"), ("rate", "At most N devices a second"),
                ("deadline", "Spread over N minutes"),
            ]
            .map { Choice(value: $0.0, label: $0.1, checked: $0.0 == throttle) }
            priorityClasses = [
                ("", "Automatic (transactional for ids and aliases)"),
                ("transactional", "Transactional: ahead of campaigns"),
                ("campaign", "Campaign: quiet hours and caps apply"),
            ]
            .map { Choice(value: $0.0, label: $0.1, checked: $0.0 == (form.priorityClass ?? "")) }
            quietHoursModes = [
                ("", "Skip devices in them (counted)"), ("hold", "Hold until they end"),
            ]
            .map { Choice(value: $0.0, label: $0.1, checked: $0.0 == (form.quietHours ?? "")) }
            channels = [
                ("", "Automatic: the open app's connection, else APNs"), ("apns", "APNs only"),
                ("online", "In-app only: devices connected now"),
            ]
            .map { Choice(value: $0.0, label: $0.1, checked: $0.0 == (form.channel ?? "")) }
            audienceIs = [audience: true]
            throttleIs = [throttle: true]
            silent = form.silent == "on"
            skipUnauthorized = form.skipUnauthorized == "on"
            self.invalid = invalid
            self.check = check
        }
    }

    func composePage(_ request: Request, context: Context) async throws -> Response {
        guard let signedIn = try await signedIn(request, context: context) else { return Self.signInAgain }
        guard signedIn.identity.sendsPushes else { return Self.adminHome(signedIn) }
        var form = PushForm()
        if let replaces = request.uri.queryParameters.get("replaces").flatMap(UUID.init(uuidString:)) {
            form.replaces = replaces.uuidString.lowercased()
        }
        let page = ComposePage(
            chrome: signedIn.chrome("Compose", section: .compose), form: form,
            idempotencyKey: UUID().uuidString.lowercased())
        return Self.html(ConsoleTemplates.render("compose", page))
    }

    /// Check (the dry run, no JavaScript) or send.
    func compose(_ request: Request, context: Context) async throws -> Response {
        guard let signedIn = try await signedIn(request, context: context) else { return Self.signInAgain }
        let fields = try await Self.form(request)
        guard ConsoleCookies.csrfMatches(fields["csrf"], signedIn.csrf) else { return Self.csrfRefusal(signedIn) }
        let form = PushForm(fields: fields)
        let idempotencyKey = fields["idempotency_key"].flatMap(UUID.init(uuidString:))?.uuidString.lowercased()
        func page(invalid: [String: String] = [:], check: ComposePage.Check?, status: HTTPResponse.Status) -> Response {
            let page = ComposePage(
                chrome: signedIn.chrome("Compose", section: .compose), form: form,
                idempotencyKey: idempotencyKey ?? UUID().uuidString.lowercased(), invalid: invalid, check: check)
            return Self.html(ConsoleTemplates.render("compose", page), status: status)
        }
        let pushRequest: Components.Schemas.PushRequest
        do {
            pushRequest = try form.request()
        } catch {
            return page(
                invalid: [error.field: error.message], check: .init(ok: false, error: error.message, warnings: []),
                status: .unprocessableContent)
        }
        let checked = await dryRun(pushRequest, signedIn: signedIn)
        guard fields["action"] == "send" else {
            return page(invalid: checked.invalid, check: checked.check, status: checked.status)
        }
        guard checked.check.ok, let idempotencyKey else {
            return page(invalid: checked.invalid, check: checked.check, status: checked.status)
        }
        do {
            let accepted = try await gateway.perform(
                "createPush", path: "/v1/pushes", as: signedIn.identity, request: signedIn.origin
            ) { api in
                try await api.createPush(
                    .init(headers: .init(idempotencyKey: idempotencyKey), body: .json(pushRequest))
                )
                .accepted.body.json
            }
            return Self.redirect("/console/pushes/\(accepted.id)?done=sent")
        } catch {
            let invalid = error.field.map { [PushForm.formField(forRequestField: $0): error.message] } ?? [:]
            return page(
                invalid: invalid, check: .init(ok: false, error: error.message, warnings: []), status: error.status)
        }
    }

    /// The dry run as JSON, for the compose page's script.
    func composeCheck(_ request: Request, context: Context) async throws -> Response {
        guard let signedIn = try await signedIn(request, context: context) else {
            return Self.json(["ok": false, "error": "Your session ended: sign in again."], status: .unauthorized)
        }
        let fields = try await Self.form(request)
        guard ConsoleCookies.csrfMatches(fields["csrf"], signedIn.csrf) else {
            return Self.json(["ok": false, "error": "This page is out of date: reload it."], status: .forbidden)
        }
        let pushRequest: Components.Schemas.PushRequest
        do {
            pushRequest = try PushForm(fields: fields).request()
        } catch {
            return Self.json(["ok": false, "error": error.message, "field": error.field])
        }
        let checked = await dryRun(pushRequest, signedIn: signedIn)
        var result: [String: Any] = ["ok": checked.check.ok, "warnings": checked.check.warnings]
        if let error = checked.check.error { result["error"] = error }
        if let field = checked.invalid.keys.first { result["field"] = field }
        if let validation = checked.validation {
            result["audience_size"] = validation.audienceSize
            result["audience_size_estimated"] = validation.audienceSizeEstimated
            result["payload_bytes"] = validation.payloadBytes
            result["payload_limit"] = validation.payloadLimit
            result["priority_class"] = validation.priorityClass.rawValue
            result["waves"] = checked.check.waves.map { ["at": $0.at, "devices": $0.devices, "zones": $0.zones] }
        }
        return Self.json(result)
    }

    struct DryRun {
        var check: ComposePage.Check
        var validation: Components.Schemas.PushValidation?
        var invalid: [String: String]
        var status: HTTPResponse.Status
    }

    /// The validate operation's verdict on `pushRequest`. A push that reaches no device is not
    /// ready to send, though the API would accept it.
    func dryRun(_ pushRequest: Components.Schemas.PushRequest, signedIn: SignedIn) async -> DryRun {
        do {
            let validation = try await gateway.perform(
                "validatePush", path: "/v1/pushes/validate", as: signedIn.identity, request: signedIn.origin
            ) { api in try await api.validatePush(.init(body: .json(pushRequest))).ok.body.json }
            var check = ComposePage.Check(
                ok: true,
                size: (validation.audienceSizeEstimated ? "about " : "") + PushView.number(validation.audienceSize),
                bytes:
                    "\(PushView.number(Int64(validation.payloadBytes))) of \(PushView.number(Int64(validation.payloadLimit)))",
                priorityClass: validation.priorityClass.rawValue, warnings: validation.warnings)
            check.waves = (validation.waves ?? []).map(PushView.Wave.init)
            check.hasWaves = !check.waves.isEmpty
            if validation.audienceSize == 0 {
                check.ok = false
                check.error = "No active device is in this audience: nothing would be sent."
            }
            return DryRun(check: check, validation: validation, invalid: [:], status: .ok)
        } catch {
            let invalid = error.field.map { [PushForm.formField(forRequestField: $0): error.message] } ?? [:]
            return DryRun(
                check: .init(ok: false, error: error.message, warnings: []), validation: nil, invalid: invalid,
                status: error.status)
        }
    }
}

extension PushForm {
    /// The form as posted.
    init(fields: [String: String]) {
        let data = (try? JSONSerialization.data(withJSONObject: fields)) ?? Data("{}".utf8)
        self = (try? JSONDecoder().decode(PushForm.self, from: data)) ?? PushForm()
    }

    /// The form field that shows a problem the API names by its request field
    /// (`notification.alert.title` → `title`).
    static func formField(forRequestField field: String) -> String {
        let table: [(String, String)] = [
            ("audience.tags", "tags_any"), ("audience.aliases", "aliases"),
            ("audience.registration_ids", "registration_ids"),
            ("notification.alert.title", "title"), ("notification.alert.subtitle", "subtitle"),
            ("notification.alert.body", "body"), ("notification.badge", "badge"), ("notification.data", "data"),
            ("options.collapse_id", "collapse_id"), ("options.time_to_live_seconds", "ttl_seconds"),
            ("options.scheduled_at", "scheduled_at"), ("options.throttle.per_second", "throttle_per_second"),
            ("options.throttle.finish_within_seconds", "finish_within_minutes"),
            ("options.priority_class", "priority_class"), ("options.local_time.date", "local_date"),
            ("options.local_time", "local_time"), ("options.quiet_hours", "quiet_hours"),
            ("options.channel", "channel"), ("options.skip_unauthorized", "skip_unauthorized"),
            ("options.holdout", "holdout_percent"),
        ]
        return table.first { field.hasPrefix($0.0) }?.1 ?? "audience"
    }
}
