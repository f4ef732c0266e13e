import Foundation
import Logging
import PostgresNIO

/// Recurring schedules.
public struct ScheduleRepository: Sendable {
    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    public func create(_ schedule: Schedule) async throws {
        try await client.boundedQuery("""
            INSERT INTO schedules (id, app_id, name, push_template, recurrence, time_of_day_s, time_zone, weekdays,
                                   next_fire_at, ends_at, enabled)
            VALUES (\(schedule.id), \(schedule.appID), \(schedule.name), \(schedule.pushTemplateJSON)::jsonb,
                    \(schedule.recurrence.rawValue), \(Int32(schedule.timeOfDaySeconds)), \(schedule.timeZone),
                    \(schedule.weekdays), \(schedule.nextFireAt), \(schedule.endsAt), \(schedule.enabled))
            """, logger: logger)
    }

    public func schedule(id: UUID, appID: UUID) async throws -> Schedule? {
        let rows = try await client.boundedQuery("""
            SELECT \(unescaped: Self.columns) FROM schedules WHERE id = \(id) AND app_id = \(appID)
            """, logger: logger)
        return try await Self.schedules(from: rows).first
    }

    /// Enabled schedules due at `now`, oldest first, locked for the caller's transaction so two
    /// centers never fire one twice. `fire` returns each one's next time (`nil`: no more).
    /// - Returns: the schedules fired.
    @discardableResult
    public func fireDue(now: Date, limit: Int, _ fire: @escaping @Sendable (Schedule) async throws -> Date?) async throws -> [Schedule] {
        try await client.transaction(logger: logger) { connection in
            let rows = try await connection.query("""
                SELECT \(unescaped: Self.columns) FROM schedules
                WHERE enabled AND next_fire_at <= \(now) ORDER BY next_fire_at LIMIT \(limit) FOR UPDATE SKIP LOCKED
                """, logger: logger)
            let due = try await Self.schedules(from: rows)
            for schedule in due {
                let next = try await fire(schedule)
                let ended = next.map { next in schedule.endsAt.map { next > $0 } ?? false } ?? true
                try await connection.query("""
                    UPDATE schedules SET last_fired_at = \(now), next_fire_at = \(ended ? nil : next), enabled = \(!ended)
                    WHERE id = \(schedule.id)
                    """, logger: logger)
            }
            return due
        }
    }

    /// Stops a schedule. Returns whether it was enabled.
    @discardableResult
    public func disable(id: UUID, appID: UUID) async throws -> Bool {
        let rows = try await client.boundedQuery("""
            UPDATE schedules SET enabled = false WHERE id = \(id) AND app_id = \(appID) AND enabled RETURNING id
            """, logger: logger)
        for try await _ in rows.decode(UUID.self) { return true }
        return false
    }

    static let columns = """
        id, app_id, name, push_template::text, recurrence, time_of_day_s, time_zone, weekdays, next_fire_at, ends_at, enabled
        """

    static func schedules(from rows: PostgresRowSequence) async throws -> [Schedule] {
        var schedules: [Schedule] = []
        for try await (id, appID, name, template, recurrence, timeOfDay, timeZone, weekdays, nextFireAt, endsAt, enabled)
            in rows.decode((UUID, UUID, String, String, String, Int32, String, [Int16], Date?, Date?, Bool).self) {
            schedules.append(Schedule(
                id: id, appID: appID, name: name, pushTemplateJSON: template,
                recurrence: ScheduleRecurrence(rawValue: recurrence) ?? .once, timeOfDaySeconds: Int(timeOfDay),
                timeZone: timeZone, weekdays: weekdays, nextFireAt: nextFireAt, endsAt: endsAt, enabled: enabled))
        }
        return schedules
    }
}
