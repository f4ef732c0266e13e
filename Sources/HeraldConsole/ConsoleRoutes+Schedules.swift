import Foundation
import HTTPTypes
import HeraldAPIContract
import Hummingbird

/// The schedules list, a schedule's page with the pushes its occurrences made, and pause, resume
/// and delete. Creating and changing a schedule is the CLI's and the Open API's (docs/schedules.md).
extension ConsoleRoutes {
    struct SchedulesPage {
        var chrome: Chrome
        var schedules: [ScheduleView]
        var hasSchedules: Bool
    }

    struct SchedulePage {
        var chrome: Chrome
        var schedule: ScheduleView
        var pushes: [PushView]
        var hasPushes: Bool
    }

    /// A schedule as the pages show it.
    struct ScheduleView {
        var id: String
        var name: String
        var state: String
        var stateClass: String
        var paused: Bool
        var pausable: Bool
        var rrule: String
        /// `in Europe/Berlin`, or `at 09:00 in each device's time zone`.
        var when: String
        var startsAt: String
        var lateWindow: String
        var next: String
        var nextOccurrences: [String]
        var hasNext: Bool
        var pushesCreated: String
        var skipped: String
        var lastSkip: String?
        var title: String?
        var body: String?
        var audience: String

        init(_ schedule: Components.Schemas.Schedule) {
            id = schedule.id
            name = schedule.name
            state = schedule.state.rawValue
            stateClass = schedule.state == .active ? "sending" : schedule.state == .paused ? "paused" : "completed"
            paused = schedule.state == .paused
            pausable = schedule.state == .active
            rrule = schedule.recurrence.rrule
            if let local = schedule.push.options?.localTime {
                when = "at \(local.time) in each device's own time zone"
            } else {
                when = "in \(schedule.recurrence.timeZone)"
            }
            startsAt = schedule.recurrence.startsAt.replacingOccurrences(of: "T", with: " ")
            lateWindow = "sent up to \(schedule.lateWindowMinutes) minutes late, else skipped"
            nextOccurrences = schedule.nextOccurrences.map(PushView.time)
            next = nextOccurrences.first ?? "–"
            hasNext = !nextOccurrences.isEmpty
            pushesCreated = PushView.number(Int64(schedule.pushesCreated))
            skipped = PushView.number(Int64(schedule.occurrencesSkipped))
            lastSkip = schedule.lastSkip.map { "\(PushView.time($0.occurrenceAt)): \($0.reason)" }
            title = schedule.push.notification?.alert?.title
            body = schedule.push.notification?.alert?.body
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            audience = (try? String(decoding: encoder.encode(schedule.push.audience), as: UTF8.self)) ?? "–"
        }
    }

    func schedulesPage(_ request: Request, context: Context) async throws -> Response {
        guard let signedIn = try await signedIn(request, context: context) else { return Self.signInAgain }
        guard signedIn.identity.sendsPushes else { return Self.adminHome(signedIn) }
        let list: Components.Schemas.ScheduleList
        do {
            list = try await gateway.perform(
                "listSchedules", path: "/v1/schedules", as: signedIn.identity, request: signedIn.origin
            ) { api in try await api.listSchedules(.init()).ok.body.json }
        } catch {
            return Self.refusal(signedIn, error)
        }
        let views = list.schedules.map(ScheduleView.init)
        return Self.html(
            ConsoleTemplates.render(
                "schedules",
                SchedulesPage(
                    chrome: signedIn.chrome("Schedules", section: .schedules), schedules: views,
                    hasSchedules: !views.isEmpty)))
    }

    func schedulePage(_ request: Request, context: Context) async throws -> Response {
        guard let signedIn = try await signedIn(request, context: context) else { return Self.signInAgain }
        let notice: String? =
            switch request.uri.queryParameters.get("done") {
            case "pause": "Paused: no occurrence fires until you resume it."
            case "resume": "Resumed: it goes on from its next occurrence after now."
            default: nil
            }
        return await schedulePage(context: context, signedIn: signedIn, notice: notice)
    }

    func schedulePage(
        context: Context, signedIn: SignedIn, notice: String? = nil, error: String? = nil,
        status: HTTPResponse.Status = .ok
    ) async -> Response {
        guard signedIn.identity.sendsPushes else { return Self.adminHome(signedIn) }
        let id = context.parameters.get("id") ?? ""
        let schedule: Components.Schemas.Schedule
        let pushes: Components.Schemas.PushList
        do {
            schedule = try await gateway.perform(
                "getSchedule", path: "/v1/schedules/\(id)", as: signedIn.identity, request: signedIn.origin
            ) { api in try await api.getSchedule(.init(path: .init(scheduleId: id))).ok.body.json }
            pushes = try await gateway.perform(
                "listPushes", path: "/v1/pushes", as: signedIn.identity, request: signedIn.origin
            ) { api in try await api.listPushes(.init(query: .init(scheduleId: id, limit: 20))).ok.body.json }
        } catch {
            return Self.refusal(signedIn, error)
        }
        var chrome = signedIn.chrome(schedule.name, section: .schedules)
        chrome.notice = notice
        chrome.error = error
        let views = pushes.pushes.map(PushView.init)
        let page = SchedulePage(
            chrome: chrome, schedule: ScheduleView(schedule), pushes: views, hasPushes: !views.isEmpty)
        return Self.html(ConsoleTemplates.render("schedule", page), status: status)
    }

    func scheduleAction(_ request: Request, context: Context) async throws -> Response {
        guard let signedIn = try await signedIn(request, context: context) else { return Self.signInAgain }
        let form = try await Self.form(request)
        guard ConsoleCookies.csrfMatches(form["csrf"], signedIn.csrf) else { return Self.csrfRefusal(signedIn) }
        let id = context.parameters.get("id") ?? ""
        let action = context.parameters.get("action") ?? ""
        let path = "/v1/schedules/\(id)"
        guard ["pause", "resume", "delete"].contains(action) else {
            return Self.message(
                signedIn, status: .notFound, heading: "Not found", text: "A schedule has no action “\(action)”.",
                link: .init(href: "/console/schedules/\(id)", label: "Back to the schedule"))
        }
        if action == "delete" && form["confirmed"] != "1" {
            let page = ConfirmPage(
                chrome: signedIn.chrome("Delete this schedule?", section: .schedules),
                heading: "Delete this schedule?",
                text: "No occurrence fires any more. The pushes it made stay. This cannot be undone.",
                action: "/console/schedules/\(id)/delete", button: "Yes, delete it", back: "/console/schedules/\(id)")
            return Self.html(ConsoleTemplates.render("confirm", page))
        }
        do {
            switch action {
            case "pause":
                _ = try await gateway.perform(
                    "pauseSchedule", path: path + "/pause", as: signedIn.identity, request: signedIn.origin
                ) { api in try await api.pauseSchedule(.init(path: .init(scheduleId: id))).ok }
            case "resume":
                _ = try await gateway.perform(
                    "resumeSchedule", path: path + "/resume", as: signedIn.identity, request: signedIn.origin
                ) { api in try await api.resumeSchedule(.init(path: .init(scheduleId: id))).ok }
            default:
                _ = try await gateway.perform(
                    "deleteSchedule", path: path, as: signedIn.identity, request: signedIn.origin
                ) { api in try await api.deleteSchedule(.init(path: .init(scheduleId: id))).noContent }
                return Self.redirect("/console/schedules")
            }
        } catch {
            return await schedulePage(context: context, signedIn: signedIn, error: error.message, status: error.status)
        }
        return Self.redirect("/console/schedules/\(id)?done=\(action)")
    }
}
