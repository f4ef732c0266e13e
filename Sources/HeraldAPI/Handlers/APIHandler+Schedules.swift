import Foundation
import HeraldAPIContract
import HeraldDomain
import HeraldStore

/// Recurring schedules (docs/schedules.md): a push request and an RRULE in a named time zone;
/// herald-center creates each occurrence's push, once. A server key.
extension APIHandler {
    func createSchedule(_ input: Operations.CreateSchedule.Input) async throws -> Operations.CreateSchedule.Output {
        let appID = try Principal.requireApp()
        guard case .json(let body) = input.body else { throw APIError.badRequest("a JSON body is required") }
        try Self.checkNamedText("schedule", name: body.name, description: nil)
        let blueprint = try await scheduleBlueprint(body.push, appID: appID)
        let timing = try Self.checkedTiming(body.recurrence, localTime: blueprint.timing?.localTime)
        guard let next = timing.next(after: Date()) else {
            throw APIError.invalid(
                "recurrence.rrule", "the rule has no occurrence after now (its COUNT or UNTIL has passed)")
        }
        let id = UUID()
        let schedule = try await naming(.schedule) {
            try await schedules.create(
                id: id, appID: appID, name: body.name, rrule: timing.rule.rrule,
                timeZone: body.recurrence.timeZone, startsAtLocal: timing.start.text,
                pushRequestJSON: PushComposer.json(body.push), blueprint: blueprint,
                lateWindowSeconds: (body.lateWindowMinutes ?? 60) * 60, next: next,
                savedBy: Principal.currentKey?.keyID,
                audit: auditEntry(
                    "schedule.created", appID: appID,
                    details: ["schedule": id.lowercased, "name": body.name, "rrule": timing.rule.rrule]))
        }
        return .created(.init(body: .json(try .init(schedule))))
    }

    func listSchedules(_ input: Operations.ListSchedules.Input) async throws -> Operations.ListSchedules.Output {
        let appID = try Principal.requireApp()
        return .ok(
            .init(body: .json(.init(schedules: try await schedules.schedules(appID: appID).map { try .init($0) }))))
    }

    func getSchedule(_ input: Operations.GetSchedule.Input) async throws -> Operations.GetSchedule.Output {
        .ok(.init(body: .json(try .init(try await existingSchedule(input.path.scheduleId)))))
    }

    func updateSchedule(_ input: Operations.UpdateSchedule.Input) async throws -> Operations.UpdateSchedule.Output {
        var schedule = try await existingSchedule(input.path.scheduleId)
        guard case .json(let body) = input.body else { throw APIError.badRequest("a JSON body is required") }
        guard body.name != nil || body.recurrence != nil || body.push != nil || body.lateWindowMinutes != nil else {
            throw APIError.badRequest("name what to change: name, recurrence, push or late_window_minutes")
        }
        if let name = body.name {
            try Self.checkNamedText("schedule", name: name, description: nil)
            schedule.name = name
        }
        if let push = body.push {
            schedule.blueprint = try await scheduleBlueprint(push, appID: schedule.appID)
            schedule.pushRequestJSON = PushComposer.json(push)
        }
        if let minutes = body.lateWindowMinutes { schedule.lateWindowSeconds = minutes * 60 }
        if let requested = body.recurrence {
            let timing = try Self.checkedTiming(requested, localTime: schedule.blueprint.timing?.localTime)
            schedule.rrule = timing.rule.rrule
            schedule.timeZone = requested.timeZone
            schedule.startsAtLocal = Recurrence.LocalStart(requested.startsAt)?.text ?? requested.startsAt
        }
        if body.recurrence != nil || (body.push != nil && schedule.nextOccurrenceAt != nil) {
            // A new rule, or a push that moved to (or from) a local time: when it fires changes.
            if let stored = schedule.timing {
                _ = try Self.checkedTiming(
                    .init(rrule: schedule.rrule, timeZone: schedule.timeZone, startsAt: schedule.startsAtLocal),
                    localTime: schedule.blueprint.timing?.localTime)
                guard let next = stored.next(after: Date()) else {
                    throw APIError.invalid("recurrence.rrule", "the rule has no occurrence after now")
                }
                schedule.nextOccurrenceAt = next
            }
        }
        guard
            let updated = try await naming(
                .schedule,
                {
                    try await schedules.update(
                        schedule, savedBy: Principal.currentKey?.keyID,
                        audit: auditEntry(
                            "schedule.updated", appID: schedule.appID,
                            details: [
                                "schedule": schedule.id.lowercased, "name": schedule.name, "rrule": schedule.rrule,
                            ]))
                })
        else {
            throw APIError.notFound("schedule")
        }
        return .ok(.init(body: .json(try .init(updated))))
    }

    func deleteSchedule(_ input: Operations.DeleteSchedule.Input) async throws -> Operations.DeleteSchedule.Output {
        let appID = try Principal.requireApp()
        let id = try Self.uuid(input.path.scheduleId, "scheduleId")
        guard
            try await schedules.delete(
                id: id, appID: appID,
                audit: auditEntry("schedule.deleted", appID: appID, details: ["schedule": id.lowercased]))
        else { throw APIError.notFound("schedule") }
        return .noContent(.init())
    }

    func pauseSchedule(_ input: Operations.PauseSchedule.Input) async throws -> Operations.PauseSchedule.Output {
        var schedule = try await existingSchedule(input.path.scheduleId)
        schedule.paused = true
        return .ok(.init(body: .json(try .init(try await saved(schedule, as: "schedule.paused")))))
    }

    func resumeSchedule(_ input: Operations.ResumeSchedule.Input) async throws -> Operations.ResumeSchedule.Output {
        var schedule = try await existingSchedule(input.path.scheduleId)
        if schedule.paused {
            // What passed while it was paused is not sent: its next occurrence after now.
            schedule.paused = false
            if let timing = schedule.timing, schedule.nextOccurrenceAt != nil {
                schedule.nextOccurrenceAt = timing.next(after: Date())
            }
        }
        return .ok(.init(body: .json(try .init(try await saved(schedule, as: "schedule.resumed")))))
    }

    /// Saves a paused or resumed schedule by the calling key, with its audit entry.
    private func saved(_ schedule: ScheduleRecord, as action: String) async throws -> ScheduleRecord {
        guard
            let updated = try await schedules.update(
                schedule, savedBy: Principal.currentKey?.keyID,
                audit: auditEntry(action, appID: schedule.appID, details: ["schedule": schedule.id.lowercased]))
        else {
            throw APIError.notFound("schedule")
        }
        return updated
    }

    private func existingSchedule(_ text: String) async throws -> ScheduleRecord {
        let appID = try Principal.requireApp()
        let id = try Self.uuid(text, "scheduleId")
        guard let schedule = try await schedules.schedule(id: id, appID: appID) else {
            throw APIError.notFound("schedule")
        }
        return schedule
    }

    /// The push every occurrence sends, composed now by the rules `POST /v1/pushes` applies (a
    /// template's notification and a segment's filter copied now); refusals name the field under
    /// `push.`. A schedule says when: a push of its own with `scheduled_at`, `expires_at` or
    /// `replaces` is refused.
    func scheduleBlueprint(_ request: Components.Schemas.PushRequest, appID: UUID) async throws -> PushBlueprint {
        do {
            if request.options?.scheduledAt != nil || request.options?.expiresAt != nil {
                throw APIError.invalid(
                    "options.scheduled_at",
                    "a schedule says when its pushes go out: leave scheduled_at and expires_at out (time_to_live_seconds counts from each occurrence)"
                )
            }
            if request.options?.replaces != nil {
                throw APIError.invalid("options.replaces", "a scheduled push cannot replace an earlier push")
            }
            if request.variants != nil || request.options?.holdout != nil {
                throw APIError.invalid(
                    request.variants != nil ? "variants" : "options.holdout",
                    "a schedule sends one notification: send an A/B test as a push of its own")
            }
            if request.options?.localTime?.date != nil {
                throw APIError.invalid(
                    "options.local_time.date", "each occurrence gives the date: leave local_time.date out of a schedule"
                )
            }
            let composed = try await composedPush(request, appID: appID)
            return PushBlueprint(
                audienceJSON: composed.audience.json, notificationJSON: composed.notificationJSON,
                optionsJSON: composed.optionsJSON, payload: composed.payload,
                template: composed.personalization?.stored, pushType: composed.pushType.rawValue,
                priority: composed.priority.rawValue, priorityClass: composed.priorityClass,
                collapseID: composed.collapseID, timeToLiveSeconds: request.options?.timeToLiveSeconds,
                throttlePerSecond: composed.throttlePerSecond, finishWithinSeconds: composed.finishWithinSeconds,
                timing: composed.timing)
        } catch var error as APIError {
            error.field = error.field.map { "push.\($0)" }
            throw error
        }
    }

    /// The rule, its local start and its zone, checked; for pushes at `localTime` in each
    /// device's zone, fired when UTC+14 reaches it on each of the rule's days.
    static func checkedTiming(
        _ recurrence: Components.Schemas.ScheduleRecurrence, localTime: PushTiming.LocalTime? = nil
    ) throws(APIError) -> ScheduleTiming {
        let rule: Recurrence
        do {
            rule = try Recurrence(rrule: recurrence.rrule)
        } catch {
            throw .invalid("recurrence.rrule", error.description)
        }
        guard let zone = TimeZone(identifier: recurrence.timeZone) else {
            throw .invalid(
                "recurrence.time_zone", "\(recurrence.timeZone) is not an IANA time zone name (e.g. Europe/Berlin)")
        }
        guard let start = Recurrence.LocalStart(recurrence.startsAt) else {
            throw .invalid("recurrence.starts_at", "starts_at is a local date and time, YYYY-MM-DDTHH:MM")
        }
        if localTime != nil, !rule.hours.isEmpty || !rule.minutes.isEmpty {
            throw .invalid(
                "recurrence.rrule",
                "the push's local_time is the time of day in each device's zone: leave BYHOUR and BYMINUTE out")
        }
        return ScheduleTiming(rule: rule, start: start, zone: zone).atLocalTime(localTime)
    }
}

extension Components.Schemas.Schedule {
    init(_ schedule: ScheduleRecord) throws {
        var next: [Date] = []
        if let at = schedule.nextOccurrenceAt, let timing = schedule.timing {
            next = timing.occurrences(after: at.addingTimeInterval(-1), limit: 5)
        }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        self.init(
            id: schedule.id.lowercased, name: schedule.name,
            recurrence: .init(rrule: schedule.rrule, timeZone: schedule.timeZone, startsAt: schedule.startsAtLocal),
            push: try decoder.decode(Components.Schemas.PushRequest.self, from: Data(schedule.pushRequestJSON.utf8)),
            lateWindowMinutes: schedule.lateWindowSeconds / 60,
            state: schedule.paused ? .paused : schedule.nextOccurrenceAt == nil ? .ended : .active,
            nextOccurrences: next, pushesCreated: schedule.pushesCreated,
            occurrencesSkipped: schedule.occurrencesSkipped,
            lastSkip: schedule.lastSkippedAt.map { .init(occurrenceAt: $0, reason: schedule.lastSkipReason ?? "") },
            createdAt: schedule.createdAt, updatedAt: schedule.updatedAt)
    }
}
