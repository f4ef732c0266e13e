import Foundation
import HTTPTypes
import HeraldAPIContract
import Hummingbird
import NIOCore
import OpenAPIRuntime

/// The pushes list, a push's page with its live progress, and the push actions.
extension ConsoleRoutes {
    struct PushesPage {
        var chrome: Chrome
        var filters: [Choice]
        var pushes: [PushView]
        /// Stored, not computed: Mustache reads values through reflection (stored properties).
        var hasPushes: Bool
        var stateLabel: String?
        var next: String?

        init(chrome: Chrome, filters: [Choice], pushes: [PushView], stateLabel: String?, next: String?) {
            self.chrome = chrome
            self.filters = filters
            self.pushes = pushes
            hasPushes = !pushes.isEmpty
            self.stateLabel = stateLabel
            self.next = next
        }
    }

    struct PushPage {
        struct Failures {
            struct Row {
                var registrationID: Int64
                var reason: String
                var at: String
            }

            var show: Bool
            var rows: [Row]
            var hasRows: Bool
            var next: String?
            /// All, and each reason the push's counters name.
            var filters: [Choice]

            init(show: Bool, rows: [Row], next: String?, filters: [Choice]) {
                self.show = show
                self.rows = rows
                hasRows = !rows.isEmpty
                self.next = next
                self.filters = filters
            }
        }

        var chrome: Chrome
        var push: PushView
        var actions: PushActions
        var failures: Failures
    }

    /// The states the list filters by, as the Open API names them.
    static var stateFilters: [(Components.Schemas.PushState?, String)] {
        [
            (nil, "All"), (.scheduled, "Scheduled"), (.accepted, "Accepted"), (.fanningOut, "Fanning out"),
            (.sending, "Sending"), (.completed, "Completed"), (.canceled, "Canceled"),
        ]
    }

    func pushesPage(_ request: Request, context: Context) async throws -> Response {
        guard let signedIn = try await signedIn(request, context: context) else { return Self.signInAgain }
        guard signedIn.identity.sendsPushes else { return Self.adminHome(signedIn) }
        let query = request.uri.queryParameters
        if let id = query.get("id")?.trimmingCharacters(in: .whitespaces), !id.isEmpty {
            guard let uuid = UUID(uuidString: id) else {
                var chrome = signedIn.chrome("Pushes", section: .pushes)
                chrome.error = "“\(id)” is not a push id (a UUID such as 0b7c…-…)."
                return Self.html(
                    ConsoleTemplates.render(
                        "pushes", PushesPage(chrome: chrome, filters: [], pushes: [], stateLabel: nil, next: nil)),
                    status: .badRequest)
            }
            return Self.redirect("/console/pushes/\(uuid.uuidString.lowercased())")
        }
        let state = query.get("state").flatMap(Components.Schemas.PushState.init(rawValue:))
        let cursor = query.get("cursor").flatMap(UUID.init(uuidString:))?.uuidString.lowercased()
        let list: Components.Schemas.PushList
        do {
            list = try await gateway.perform(
                "listPushes", path: "/v1/pushes", as: signedIn.identity, request: signedIn.origin
            ) { api in
                try await api.listPushes(.init(query: .init(state: state, cursor: cursor, limit: 50))).ok.body.json
            }
        } catch {
            return Self.refusal(signedIn, error)
        }
        let filters = Self.stateFilters.map { filter, label in
            Choice(
                value: filter.map { "/console/pushes?state=\($0.rawValue)" } ?? "/console/pushes", label: label,
                selected: filter == state)
        }
        let next = list.nextCursor.map { cursor in
            "/console/pushes?cursor=\(cursor)" + (state.map { "&state=\($0.rawValue)" } ?? "")
        }
        let page = PushesPage(
            chrome: signedIn.chrome("Pushes", section: .pushes), filters: filters,
            pushes: list.pushes.map(PushView.init),
            stateLabel: state.map { $0.rawValue.replacingOccurrences(of: "_", with: " ") }, next: next)
        return Self.html(ConsoleTemplates.render("pushes", page))
    }

    func pushPage(_ request: Request, context: Context) async throws -> Response {
        guard let signedIn = try await signedIn(request, context: context) else { return Self.signInAgain }
        let notice: String? =
            switch request.uri.queryParameters.get("done") {
            case "pause": "Paused: no new devices are sent to until you resume it."
            case "resume": "Resumed."
            case "cancel": "Canceled: devices not reached yet will not get it."
            case "recall": "This is the recall: it goes to every device that accepted the original."
            case "sent": Self.sentNotice
            default: nil
            }
        return await pushPage(request, context: context, signedIn: signedIn, notice: notice)
    }

    static var sentNotice: String { "Accepted: Herald is sending it." }

    /// A push's report as a CSV download: `GET /v1/pushes/{id}/report`, as the signed-in key.
    func pushReport(_ request: Request, context: Context) async throws -> Response {
        guard let signedIn = try await signedIn(request, context: context) else { return Self.signInAgain }
        guard signedIn.identity.sendsPushes else { return Self.adminHome(signedIn) }
        let id = context.parameters.get("id") ?? ""
        do {
            let text = try await gateway.perform(
                "getPushReport", path: "/v1/pushes/\(id)/report", as: signedIn.identity, request: signedIn.origin
            ) { api in
                try await String(
                    collecting: try await api.getPushReport(.init(path: .init(pushId: id))).ok.body.csv,
                    upTo: 16 * 1024 * 1024)
            }
            // The id went through the API's check (a UUID): safe in the file name.
            return Response(
                status: .ok,
                headers: [
                    .contentType: "text/csv; charset=utf-8", .cacheControl: "no-store",
                    .contentDisposition: "attachment; filename=\"push-\(id.prefix(36)).csv\"",
                ],
                body: .init(byteBuffer: ByteBuffer(string: text)))
        } catch {
            return Self.refusal(signedIn, error)
        }
    }

    /// A push's page, with `notice` or `error` above it.
    func pushPage(
        _ request: Request, context: Context, signedIn: SignedIn, notice: String? = nil, error: String? = nil,
        status: HTTPResponse.Status = .ok
    ) async -> Response {
        guard signedIn.identity.sendsPushes else { return Self.adminHome(signedIn) }
        let id = context.parameters.get("id") ?? ""
        let failuresCursor = request.uri.queryParameters.get("failures", as: Int64.self)
        let reason = request.uri.queryParameters.get("reason").flatMap { PushForm.text($0) }
        let push: Components.Schemas.PushStatus
        let failures: Components.Schemas.FailureList
        do {
            push = try await gateway.perform(
                "getPush", path: "/v1/pushes/\(id)", as: signedIn.identity, request: signedIn.origin
            ) { api in try await api.getPush(.init(path: .init(pushId: id))).ok.body.json }
            failures = try await gateway.perform(
                "listPushFailures", path: "/v1/pushes/\(id)/failures", as: signedIn.identity, request: signedIn.origin
            ) { api in
                try await api.listPushFailures(
                    .init(path: .init(pushId: id), query: .init(reason: reason, cursor: failuresCursor, limit: 20))
                ).ok.body.json
            }
        } catch {
            return Self.refusal(signedIn, error)
        }
        var chrome = signedIn.chrome("Push \(id.prefix(8))", section: .pushes)
        chrome.notice =
            notice == Self.sentNotice && push.state == .scheduled
            ? "Accepted: it goes out at its scheduled time\(push.localTime == nil ? "" : ", zone by zone")." : notice
        chrome.error = error
        let view = PushView(push)
        let rows = failures.failures.map { failure in
            PushPage.Failures.Row(
                registrationID: failure.registrationId,
                reason: failure.reason ?? failure.status.rawValue, at: PushView.time(failure.failedAt))
        }
        let reasonQuery =
            reason.map { "&reason=\(Self.queryValue($0))" } ?? ""
        var reasons = push.counters.rejectedByReason.additionalProperties.keys.sorted()
        if push.counters.expired > 0 { reasons.append("expired") }
        let filters =
            [
                Choice(
                    value: "/console/pushes/\(view.id)#failures", label: "All", selected: reason == nil)
            ]
            + reasons.map { name in
                Choice(
                    value:
                        "/console/pushes/\(view.id)?reason=\(Self.queryValue(name))#failures",
                    label: name, selected: name == reason)
            }
        let page = PushPage(
            chrome: chrome, push: view, actions: PushActions(push),
            failures: .init(
                show: push.counters.rejected + push.counters.expired > 0 || failuresCursor != nil, rows: rows,
                next: failures.nextCursor.map { "/console/pushes/\(view.id)?failures=\($0)\(reasonQuery)#failures" },
                filters: filters))
        return Self.html(ConsoleTemplates.render("push", page), status: status)
    }

    /// The push's progress as Server-Sent Events: the Open API's stream, for a browser that
    /// authenticates with its session cookie (an `EventSource` cannot send a bearer key).
    func pushEvents(_ request: Request, context: Context) async throws -> Response {
        guard let signedIn = try await signedIn(request, context: context) else {
            return Self.json(
                ["error": ["code": APIErrorCode.signedOut.rawValue, "message": "Sign in to the console again."]],
                status: .unauthorized)
        }
        let id = context.parameters.get("id") ?? ""
        let body: HTTPBody
        do {
            body = try await gateway.perform(
                "streamPushEvents", path: "/v1/pushes/\(id)/events", as: signedIn.identity, request: signedIn.origin
            ) { api in
                guard
                    case .textEventStream(let body) = try await api.streamPushEvents(.init(path: .init(pushId: id))).ok
                        .body
                else { throw ConsoleError(.internalServerError, code: .unexpected, message: "no event stream") }
                return body
            }
        } catch {
            return Self.json(["error": ["code": error.code.rawValue, "message": error.message]], status: error.status)
        }
        return Response(
            status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-store"],
            body: ResponseBody(asyncSequence: body.map { ByteBuffer(bytes: $0) }))
    }

    func pushAction(_ request: Request, context: Context) async throws -> Response {
        guard let signedIn = try await signedIn(request, context: context) else { return Self.signInAgain }
        let form = try await Self.form(request)
        guard ConsoleCookies.csrfMatches(form["csrf"], signedIn.csrf) else { return Self.csrfRefusal(signedIn) }
        let id = context.parameters.get("id") ?? ""
        let action = context.parameters.get("action") ?? ""
        let path = "/v1/pushes/\(id)"
        guard let kind = PushAction(rawValue: action) else {
            return Self.message(
                signedIn, status: .notFound, heading: "Not found", text: "A push has no action “\(action)”.",
                link: .init(href: "/console/pushes/\(id)", label: "Back to the push"))
        }
        if kind.needsConfirmation && form["confirmed"] != "1" {
            let page = ConfirmPage(
                chrome: signedIn.chrome(kind.question, section: .pushes), heading: kind.question,
                text: kind.consequence, action: "/console/pushes/\(id)/\(action)", button: kind.button,
                back: "/console/pushes/\(id)")
            return Self.html(ConsoleTemplates.render("confirm", page))
        }
        do {
            switch kind {
            case .pause:
                _ = try await gateway.perform(
                    "pausePush", path: path + "/pause", as: signedIn.identity, request: signedIn.origin
                ) { api in try await api.pausePush(.init(path: .init(pushId: id))).ok }
            case .resume:
                _ = try await gateway.perform(
                    "resumePush", path: path + "/resume", as: signedIn.identity, request: signedIn.origin
                ) { api in try await api.resumePush(.init(path: .init(pushId: id))).ok }
            case .cancel:
                _ = try await gateway.perform("cancelPush", path: path, as: signedIn.identity, request: signedIn.origin)
                { api in try await api.cancelPush(.init(path: .init(pushId: id))).ok }
            case .recall:
                let recall = try await gateway.perform(
                    "recallPush", path: path + "/recall", as: signedIn.identity, request: signedIn.origin
                ) { api in try await api.recallPush(.init(path: .init(pushId: id))).accepted.body.json }
                return Self.redirect("/console/pushes/\(recall.id)?done=recall")
            }
        } catch {
            return await pushPage(
                request, context: context, signedIn: signedIn, error: error.message, status: error.status)
        }
        return Self.redirect("/console/pushes/\(id)?done=\(action)")
    }

    /// Where an identity that does not send pushes goes instead: the apps it manages.
    static func adminHome(_ signedIn: SignedIn) -> Response {
        redirect("/console/apps")
    }
}

/// The buttons of a push's page.
enum PushAction: String {
    case pause, resume, cancel, recall

    var needsConfirmation: Bool { self == .cancel || self == .recall }

    var question: String {
        switch self {
        case .pause: "Pause this push?"
        case .resume: "Resume this push?"
        case .cancel: "Cancel this push?"
        case .recall: "Recall this push?"
        }
    }

    var consequence: String {
        switch self {
        case .pause: "No new devices are sent to until you resume it."
        case .resume: "Sending continues where it stopped."
        case .cancel: "Devices not reached yet will never get it. This cannot be undone."
        case .recall:
            "It is canceled, and every device that got it is told to remove it (a background notification). This cannot be undone."
        }
    }

    var button: String {
        switch self {
        case .pause: "Pause"
        case .resume: "Resume"
        case .cancel: "Yes, cancel it"
        case .recall: "Yes, recall it"
        }
    }
}
