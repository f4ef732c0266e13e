import Foundation
import HeraldDomain
import HeraldRecords
import Logging
import PostgresNIO

/// A stored schedule (migration 0021; docs/schedules.md).
public struct ScheduleRecord: Sendable, Equatable {
    public var id: UUID
    public var appID: UUID
    public var name: String
    public var rrule: String
    public var timeZone: String
    public var startsAtLocal: String
    /// The `POST /v1/pushes` body as given, JSON text.
    public var pushRequestJSON: String
    public var blueprint: PushBlueprint
    public var lateWindowSeconds: Int
    public var paused: Bool
    /// Nil once the rule has ended.
    public var nextOccurrenceAt: Date?
    public var pushesCreated: Int
    public var occurrencesSkipped: Int
    public var lastSkippedAt: Date?
    public var lastSkipReason: String?
    public var createdAt: Date
    public var updatedAt: Date

    /// The rule, its start and zone, as read back (they were checked when saved); a schedule of
    /// pushes at a local time fires when UTC+14 reaches it (``ScheduleTiming/atLocalTime(_:)``).
    public var timing: ScheduleTiming? {
        guard let rule = try? Recurrence(rrule: rrule), let start = Recurrence.LocalStart(startsAtLocal),
            let zone = TimeZone(identifier: timeZone)
        else { return nil }
        return ScheduleTiming(rule: rule, start: start, zone: zone).atLocalTime(blueprint.timing?.localTime)
    }
}

/// What firing one due occurrence did.
public struct FiredOccurrence: Sendable, Equatable {
    public var scheduleID: UUID
    public var occurrence: Date
    /// The occurrence's push (nil when skipped); `created` false when another center (or an
    /// earlier attempt) had created it already.
    public var pushID: UUID?
    public var created: Bool
    /// Why it was skipped (found due past the late window).
    public var skipReason: String?
}

/// Schedules of each app, and the firing of their due occurrences by herald-center.
public struct ScheduleRepository: Sendable {
    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Why a schedule was paused when the key that saved it ended.
    public static let keyEndedReason = "paused: the key that saved it was revoked; resume it with a live key"

    /// Schedules an app may keep at most.
    public static let maximumPerApp = 1_000

    static let columns = """
        id, app_id, name, rrule, time_zone, starts_at_local, push_request::text, blueprint::text, late_window_s, \
        paused, next_occurrence_at, pushes_created, occurrences_skipped, last_skipped_at, \
        last_skip_reason, created_at, updated_at
        """

    /// A new schedule whose next occurrence the caller worked out, with `audit` appended, unless
    /// the app has ``maximumPerApp`` already.
    /// - Throws: ``NameTaken``, ``PerAppLimitReached``.
    public func create(
        id: UUID, appID: UUID, name: String, rrule: String, timeZone: String, startsAtLocal: String,
        pushRequestJSON: String, blueprint: PushBlueprint, lateWindowSeconds: Int,
        next: Date?, savedBy key: UUID? = nil, audit: AuditEntry? = nil
    ) async throws -> ScheduleRecord {
        try await NameTaken.translating {
            try await client.transaction(logger: logger) { connection in
                let inserted = try await connection.insertWithinLimit(
                    """
                    INSERT INTO schedules (id, app_id, name, rrule, time_zone, starts_at_local, push_request, blueprint,
                                           late_window_s, next_occurrence_at, saved_by_key)
                    VALUES (\(id), \(appID), \(name), \(rrule), \(timeZone), \(startsAtLocal), \(pushRequestJSON)::jsonb,
                            \(blueprint.json)::jsonb, \(Int32(lateWindowSeconds)), \(next), \(key))
                    RETURNING \(unescaped: Self.columns)
                    """, appID: appID, table: "schedules", limit: Self.maximumPerApp, logger: logger)
                if let audit { try await connection.append(audit, logger: logger) }
                return try await Self.records(inserted).first
            }
        }!
    }

    public func count(appID: UUID) async throws -> Int {
        for try await count in try await client.boundedQuery(
            "SELECT count(*) FROM schedules WHERE app_id = \(appID)", logger: logger
        ).decode(Int64.self) { return Int(count) }
        return 0
    }

    public func schedules(appID: UUID) async throws -> [ScheduleRecord] {
        try await Self.records(
            client.boundedQuery(
                "SELECT \(unescaped: Self.columns) FROM schedules WHERE app_id = \(appID) ORDER BY name, id",
                logger: logger))
    }

    public func schedule(id: UUID, appID: UUID) async throws -> ScheduleRecord? {
        try await first(
            client.boundedQuery(
                "SELECT \(unescaped: Self.columns) FROM schedules WHERE id = \(id) AND app_id = \(appID)",
                logger: logger))
    }

    /// Replaces what a schedule is (name, rule, push, late window) and its next occurrence;
    /// `key`, when given, is the key it is now saved by. `audit` is appended with the change.
    /// - Throws: ``NameTaken``.
    public func update(_ schedule: ScheduleRecord, savedBy key: UUID? = nil, audit: AuditEntry? = nil) async throws
        -> ScheduleRecord?
    {
        try await NameTaken.translating {
            try await first(
                client.audited(
                    """
                    UPDATE schedules SET name = \(schedule.name), rrule = \(schedule.rrule), time_zone = \(schedule.timeZone),
                        starts_at_local = \(schedule.startsAtLocal), push_request = \(schedule.pushRequestJSON)::jsonb,
                        blueprint = \(schedule.blueprint.json)::jsonb, late_window_s = \(Int32(schedule.lateWindowSeconds)),
                        paused = \(schedule.paused), next_occurrence_at = \(schedule.nextOccurrenceAt), updated_at = now(),
                        saved_by_key = COALESCE(\(key), saved_by_key)
                    WHERE id = \(schedule.id) AND app_id = \(schedule.appID)
                    RETURNING \(unescaped: Self.columns)
                    """, audit, logger: logger))
        }
    }

    /// Deletes the schedule, with `audit` appended. Returns whether it existed.
    @discardableResult
    public func delete(id: UUID, appID: UUID, audit: AuditEntry? = nil) async throws -> Bool {
        for try await _ in try await client.audited(
            "DELETE FROM schedules WHERE id = \(id) AND app_id = \(appID) RETURNING id", audit, logger: logger
        ).decode(UUID.self) { return true }
        return false
    }

    /// Fires the occurrences due at `now`, oldest first, at most `limit`: each in one transaction
    /// that locks its schedule (other centers skip it), creates the occurrence's push with its
    /// announcement — or, found due more than the schedule's late window after its time, skips it
    /// and records why — and moves the schedule to its next occurrence. The push's idempotency key
    /// names the schedule and the occurrence, so a retried or concurrent firing creates it once.
    public func fireDue(now: Date, pushesTopic: String, limit: Int) async throws -> [FiredOccurrence] {
        var fired: [FiredOccurrence] = []
        while fired.count < limit, let one = try await fireOne(now: now, pushesTopic: pushesTopic) {
            fired.append(one)
        }
        return fired
    }

    private func fireOne(now: Date, pushesTopic: String) async throws -> FiredOccurrence? {
        try await client.transaction(logger: logger) { connection in
            var due: UUID?
            for try await id in try await connection.run(
                """
                SELECT id FROM schedules WHERE NOT paused AND next_occurrence_at <= \(now)
                ORDER BY next_occurrence_at LIMIT 1 FOR UPDATE SKIP LOCKED
                """, logger: logger
            ).decode(UUID.self) { due = id }
            guard let due else { return nil }
            // It runs on the authority of the key that saved it: that key ended (revoked, or
            // rotated and past its grace) since, and it pauses instead of firing.
            var keyEnded = false
            for try await ended in try await connection.run(
                """
                SELECT EXISTS (SELECT 1 FROM schedules s JOIN api_keys k ON k.id = s.saved_by_key
                               WHERE s.id = \(due) AND k.revoked_at IS NOT NULL AND k.revoked_at <= now())
                """, logger: logger
            ).decode(Bool.self) { keyEnded = ended }
            if keyEnded {
                let reason = Self.keyEndedReason
                try await connection.run(
                    "UPDATE schedules SET paused = true, last_skip_reason = \(reason), updated_at = now() WHERE id = \(due)",
                    logger: logger)
                return FiredOccurrence(
                    scheduleID: due, occurrence: now, pushID: nil, created: false, skipReason: reason)
            }
            let schedule: ScheduleRecord
            do {
                guard
                    let read = try await Self.records(
                        connection.run(
                            "SELECT \(unescaped: Self.columns) FROM schedules WHERE id = \(due)", logger: logger)
                    ).first
                else { return nil }
                schedule = read
            } catch let error as DecodingError {
                // Written by something other than the Open API: paused with why, so it neither
                // blocks the schedules due after it nor fires something nobody asked for.
                let reason = "paused: its stored push cannot be read (\(error))"
                try await connection.run(
                    "UPDATE schedules SET paused = true, last_skip_reason = \(reason) WHERE id = \(due)",
                    logger: logger)
                return FiredOccurrence(
                    scheduleID: due, occurrence: now, pushID: nil, created: false, skipReason: reason)
            }
            guard let occurrence = schedule.nextOccurrenceAt else { return nil }
            var result = FiredOccurrence(
                scheduleID: schedule.id, occurrence: occurrence, pushID: nil, created: false, skipReason: nil)
            let lateness = now.timeIntervalSince(occurrence)
            if lateness > Double(schedule.lateWindowSeconds) {
                let reason =
                    "found due \(Int(lateness)) s after its time, past the schedule's late window of \(schedule.lateWindowSeconds) s (was herald-center down?)"
                result.skipReason = reason
                try await connection.run(
                    """
                    UPDATE schedules SET occurrences_skipped = occurrences_skipped + 1, last_skipped_at = \(occurrence),
                        last_skip_reason = \(reason)
                    WHERE id = \(schedule.id)
                    """, logger: logger)
            } else {
                let pushID = UUID()
                let push = schedule.blueprint.push(
                    id: pushID, appID: schedule.appID, scheduleID: schedule.id, occurrence: occurrence)
                let announcement = try PushRepository.OutboxDraft.pushEvent(
                    .created, pushID: pushID, appID: schedule.appID, topic: pushesTopic)
                let inserted = try await connection.execute(
                    InsertPushWithAnnouncement(push: push, record: announcement), logger: logger)
                for try await _ in inserted { result.created = true }
                let key = push.idempotencyKey ?? ""
                let linked = try await connection.run(
                    """
                    UPDATE pushes SET schedule_id = \(schedule.id), occurrence_at = \(occurrence)
                    WHERE app_id = \(schedule.appID) AND idempotency_key = \(key) RETURNING id
                    """, logger: logger)
                for try await id in linked.decode(UUID.self) { result.pushID = id }
                if result.created {
                    try await connection.run(
                        "UPDATE schedules SET pushes_created = pushes_created + 1 WHERE id = \(schedule.id)",
                        logger: logger)
                }
            }
            try await connection.run(
                """
                UPDATE schedules SET next_occurrence_at = \(schedule.timing?.next(after: occurrence))
                WHERE id = \(schedule.id)
                """, logger: logger)
            return result
        }
    }

    // MARK: Rows

    private func first(_ rows: ReadRows) async throws -> ScheduleRecord? {
        try await Self.records(rows).first
    }

    static func records(_ rows: ReadRows) async throws -> [ScheduleRecord] {
        var records: [ScheduleRecord] = []
        for try await row in rows {
            let (
                id, appID, name, rrule, timeZone, start, request, blueprint, lateWindow, paused, next, created,
                skipped, lastSkippedAt, lastSkipReason, createdAt, updatedAt
            ) = try row.decode(
                (
                    UUID, UUID, String, String, String, String, String, String, Int32, Bool, Date?, Int32, Int32,
                    Date?, String?, Date, Date
                ).self)
            records.append(
                ScheduleRecord(
                    id: id, appID: appID, name: name, rrule: rrule, timeZone: timeZone, startsAtLocal: start,
                    pushRequestJSON: request, blueprint: try PushBlueprint(json: blueprint),
                    lateWindowSeconds: Int(lateWindow), paused: paused, nextOccurrenceAt: next,
                    pushesCreated: Int(created), occurrencesSkipped: Int(skipped),
                    lastSkippedAt: lastSkippedAt, lastSkipReason: lastSkipReason, createdAt: createdAt,
                    updatedAt: updatedAt))
        }
        return records
    }
}
