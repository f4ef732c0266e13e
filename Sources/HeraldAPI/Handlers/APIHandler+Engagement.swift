import Foundation
import HeraldAPIContract
import HeraldDomain
import HeraldStore

/// `POST /v1/events`: what devices did with the pushes they were sent (docs/engagement.md).
extension APIHandler {
    func reportEvents(_ input: Operations.ReportEvents.Input) async throws -> Operations.ReportEvents.Output {
        guard case .json(let body) = input.body else { throw APIError.badRequest("send the events as JSON") }
        let appID = try Principal.requireApp()
        let reports = try Self.reports(body.events, now: Date(), oneDevice: Principal.isClient)
        switch try await engagement.record(reports, appID: appID) {
        case .recorded(let counted):
            metrics.engagementEvents(counted: counted, duplicates: reports.count - counted)
            return .ok(
                .init(
                    body: .json(.init(received: reports.count, counted: counted, duplicates: reports.count - counted))))
        case .refused(.unknownPush(let index)):
            throw APIError(
                .notFound, code: .notFound,
                message:
                    "push \(body.events[index].pushId) does not exist (or belongs to another app); leave this event out and send the rest again",
                field: "events[\(index)].push_id")
        case .refused(.unknownDevice(let index)):
            throw APIError(
                .notFound, code: .notFound,
                message:
                    "no device of this app has this token (register it first); leave this event out and send the rest again",
                field: "events[\(index)].token")
        case .refused(.notSent(let index)):
            throw APIError(
                .forbidden, code: .notSentToDevice,
                message:
                    "push \(body.events[index].pushId) was not sent to this device; leave this event out and send the rest again",
                field: "events[\(index)]")
        }
    }

    /// The batch's events checked for shape and age, in order.
    /// - Parameter oneDevice: a client key's batch: every event names the same token.
    static func reports(_ events: [Components.Schemas.EngagementEvent], now: Date, oneDevice: Bool) throws(APIError)
        -> [EngagementReport]
    {
        guard !events.isEmpty else { throw .invalid("events", "send at least one event") }
        guard events.count <= EngagementLimits.eventsPerBatch else {
            throw .invalid(
                "events",
                "a batch holds at most \(EngagementLimits.eventsPerBatch) events; this one has \(events.count): send it in parts"
            )
        }
        var reports: [EngagementReport] = []
        reports.reserveCapacity(events.count)
        for (index, event) in events.enumerated() {
            let field = "events[\(index)]"
            let pushID = try uuid(event.pushId, "\(field).push_id")
            let token = try DeviceInput.token(event.token, field: "\(field).token")
            if oneDevice, let first = reports.first, first.token != token {
                throw .invalid(
                    "\(field).token",
                    "a client key reports for its own device: every event of a batch names the same token")
            }
            let type = EngagementType(event._type)
            let action = event.action ?? ""
            switch type {
            case .action:
                guard EngagementLimits.isActionIdentifier(action) else {
                    throw .invalid(
                        "\(field).action",
                        "an action event names the action's identifier: 1 to \(EngagementLimits.actionLength) letters, digits, '.', '_', ':' or '-'"
                    )
                }
            case .received, .opened, .dismissed:
                guard event.action == nil else {
                    throw .invalid("\(field).action", "only an event of type action names an action")
                }
            }
            guard event.occurredAt >= now.addingTimeInterval(-EngagementLimits.window) else {
                throw APIError(
                    .unprocessableContent, code: .eventTooOld,
                    message:
                        "this event happened over 7 days ago and is no longer counted; leave it out and send the rest again",
                    field: "\(field).occurred_at")
            }
            guard event.occurredAt <= now.addingTimeInterval(EngagementLimits.clockSkew) else {
                throw .invalid(
                    "\(field).occurred_at", "this event is dated more than 10 minutes ahead of the server's clock")
            }
            reports.append(
                EngagementReport(
                    pushID: pushID, token: token, type: type, action: action, textInput: event.textInput ?? false,
                    occurredAt: event.occurredAt))
        }
        return reports
    }
}

extension EngagementType {
    init(_ type: Components.Schemas.EngagementEventType) {
        switch type {
        case .received: self = .received
        case .opened: self = .opened
        case .action: self = .action
        case .dismissed: self = .dismissed
        }
    }
}

extension Components.Schemas.Engagement {
    /// A push's counts, its rates against the devices it reached.
    init(_ counts: EngagementCounts, reached: Int64) {
        self.init(
            reached: reached, received: counts.received, opened: counts.opened, dismissed: counts.dismissed,
            actions: .init(additionalProperties: counts.actions),
            receivedRate: EngagementCounts.rate(counts.received, of: reached),
            openRate: EngagementCounts.rate(counts.opened, of: reached))
    }
}
