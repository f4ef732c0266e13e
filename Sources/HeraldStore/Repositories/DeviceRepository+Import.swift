import Foundation
import HeraldAPNsVocabulary
import HeraldCore
import HeraldDomain
import HeraldTiming
import Logging
import NIOCore
import PostgresNIO

extension DeviceRepository {
    /// Registers (or refreshes) every device `chunks` yields (checked by the caller; their
    /// `appID` is ignored for `appID`), through `COPY ... FROM STDIN` into
    /// a temporary table and one merge, in one transaction: all of them or, on an error, none.
    ///
    /// A token that appears twice takes its last line. A known token is refreshed as
    /// ``register(_:)`` would (same registration id, reactivated, tags added).
    /// One import of an app runs at a time (a transaction-scoped advisory lock, whichever
    /// process runs it); `started` is called once this one holds it, before the first row is read.
    /// A line whose device would break a ``DeviceLimits`` limit (more tags than allowed, an alias
    /// naming more devices than allowed) is rejected alone, with every other line of its token.
    ///
    /// The upload has no deadline here (the caller paces it); the database's side has two: a
    /// connection must come from the pool within `connectionWithin`, and each statement of the
    /// merge must end within `mergeWithin` (the transaction's `statement_timeout`, so PostgreSQL
    /// itself stops it and rolls everything back).
    /// - Returns: how many devices were registered or refreshed, and the lines rejected for the
    ///   limits, by their numbers.
    /// - Throws: ``ImportInProgress`` when another import of the app runs;
    ///   ``ImportConnectionUnavailable`` without a connection in time (nothing of it was read);
    ///   ``ImportMergeTimedOut`` when the merge ran past `mergeWithin` (PostgreSQL stopped it: its
    ///   `statement_timeout`).
    ///
    /// The COPY itself has no `statement_timeout`: postgres-nio (1.x) ends the process when the
    /// server stops a COPY while rows are still being written to it (seen in a test of this:
    /// "Invalid query state machine action in state: .closing, action: wait"). The upload is
    /// bounded by its reader instead (`chunks`: herald-api's pace and ceiling, checked per chunk).
    public func importDevices<Chunks: AsyncSequence & Sendable>(
        appID: UUID, chunks: Chunks, connectionWithin: Duration, mergeWithin: Duration,
        started: @escaping @Sendable () -> Void = {}
    ) async throws -> (imported: Int, overLimits: [(line: Int, message: String)])
    where Chunks.Element == [ImportLine] {
        let (imported, overLimits): (Int, [(line: Int, message: String)])
        do {
            (imported, overLimits) = try await withStartDeadline(connectionWithin) { leased in
                try await importTransaction(appID: appID, chunks: chunks, mergeWithin: mergeWithin) {
                    leased()
                } started: {
                    started()
                }
            }
        } catch is DeadlineExceeded {
            throw ImportConnectionUnavailable(waited: connectionWithin)
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "57014" {
            throw ImportMergeTimedOut(limit: mergeWithin)
        }
        // A bulk import can multiply the tables' size before autovacuum's next look; without
        // fresh statistics the planner treats them as small and the next fan-out's tag query
        // picks a nested loop that runs for minutes (seen: 70 s for 100,000 devices, 25 ms after).
        // The import is committed by now: a failure here is logged, never the import's.
        if imported >= 1_000 {
            do {
                // As the tables' owner (the runtime role may not analyze them; migration 0028).
                try await client.boundedQuery("SELECT herald_analyze_devices()", logger: logger)
            } catch {
                logger.warning(
                    "cannot analyze the devices after an import; autovacuum will",
                    metadata: ["error": "\(String(reflecting: error))"])
            }
        }
        return (imported, overLimits)
    }

    private func importTransaction<Chunks: AsyncSequence & Sendable>(
        appID: UUID, chunks: Chunks, mergeWithin: Duration, leased: @escaping @Sendable () -> Bool,
        started: @escaping @Sendable () -> Void
    ) async throws -> (Int, [(line: Int, message: String)])
    where Chunks.Element == [ImportLine] {
        try await client.transaction(logger: logger, within: nil) { connection in
            // Too late: the caller was answered that no connection came; nothing is read.
            guard leased() else { throw CancellationError() }
            // One import of an app at a time, whichever herald-api runs it.
            let locked = try await connection.run(
                "SELECT pg_try_advisory_xact_lock(hashtextextended('herald-device-import:' || \(appID)::text, 0))",
                logger: logger)
            for try await granted in locked.decode(Bool.self) where !granted { throw ImportInProgress(appID: appID) }
            started()
            try await connection.run(
                """
                CREATE TEMPORARY TABLE device_import (
                    line bigint, token bytea, environment text, topic text, alias text, tags text[], locale text, time_zone text,
                    country text, app_version text, os_version text, attributes jsonb, attributes_removed text[],
                    authorization_status text
                ) ON COMMIT DROP
                """, logger: logger)
            try await connection.copyFrom(
                table: "device_import",
                columns: [
                    "line", "token", "environment", "topic", "alias", "tags", "locale", "time_zone", "country",
                    "app_version", "os_version", "attributes", "attributes_removed", "authorization_status",
                ],
                logger: logger
            ) { writer in
                var buffer = ByteBuffer()
                for try await chunk in chunks {
                    buffer.clear()
                    for row in chunk {
                        CopyText.appendRow(row.registration, line: row.number, to: &buffer)
                    }
                    if buffer.readableBytes > 0 { try await writer.write(buffer) }
                }
            }
            // The merge, and what follows in this transaction, is bounded by PostgreSQL itself.
            let timeout = "\(mergeWithin.wholeMilliseconds)"
            try await connection.run("SELECT set_config('statement_timeout', \(timeout), true)", logger: logger)
            // Optimistic: the schema's triggers check the limits as the rows go in, so a file
            // whose lines all keep them (nearly every file) pays no check of its own. Only when
            // the triggers refuse the merge is it undone and done again without the lines that
            // would break a limit (found by a precise, heavier query).
            try await connection.run("SAVEPOINT device_import_merge", logger: logger)
            do {
                let count = try await Self.mergeImport(appID: appID, on: connection, logger: logger)
                return (count, [(line: Int, message: String)]())
            } catch let error as PSQLError where ["tags", "alias"].contains(DeviceLimits.refusal(error)?.field) {
                try await connection.run("ROLLBACK TO SAVEPOINT device_import_merge", logger: logger)
                let overLimits = try await Self.rejectLinesOverLimits(appID: appID, on: connection, logger: logger)
                let count = try await Self.mergeImport(appID: appID, on: connection, logger: logger)
                return (count, overLimits)
            }
        }
    }

    /// Merges `device_import` into the app's devices (and their tags); returns how many devices
    /// were registered or refreshed.
    static func mergeImport(appID: UUID, on connection: PostgresConnection, logger: Logger) async throws -> Int {
        // Known tokens are updated through a join with the import (their removed attributes
        // read from their own line), new ones inserted: one statement, linear in the import.
        // (An INSERT … ON CONFLICT DO UPDATE cannot see the removed attributes, which are no
        // column of `devices`, but by a look-up per conflicting row: quadratic, minutes for
        // 100,000 updates.)
        let merged = try await connection.run(
            """
            WITH latest AS (
                SELECT DISTINCT ON (token) token, environment, topic, alias, locale, time_zone, country, app_version,
                       os_version, attributes, attributes_removed, authorization_status
                FROM device_import ORDER BY token, line DESC
            ), updated AS (
                UPDATE devices d SET
                    attributes = herald_merge_attributes(d.attributes, l.attributes, l.attributes_removed),
                    authorization_status = COALESCE(l.authorization_status, d.authorization_status),
                    \(unescaped: Self.refreshSQL(existing: "d", incoming: "l"))
                FROM latest l
                WHERE d.app_id = \(appID) AND d.token = l.token
                RETURNING d.id
            ), inserted AS (
                INSERT INTO devices (app_id, token, environment, topic, alias, locale, time_zone, country, app_version,
                                     os_version, attributes, authorization_status)
                SELECT \(appID), token, environment, topic, alias, locale, time_zone, country, app_version, os_version,
                       attributes, authorization_status
                FROM latest l
                WHERE NOT EXISTS (SELECT 1 FROM devices d WHERE d.app_id = \(appID) AND d.token = l.token)
                -- A device the app's SDK registered while the import ran: refreshed as a
                -- registration would (its line's removed attributes are not applied then).
                ON CONFLICT (app_id, token) DO UPDATE SET
                    attributes = herald_merge_attributes(devices.attributes, EXCLUDED.attributes, NULL),
                    authorization_status = COALESCE(EXCLUDED.authorization_status, devices.authorization_status),
                    \(unescaped: Self.refreshSQL(existing: "devices", incoming: "EXCLUDED"))
                RETURNING id
            )
            SELECT (SELECT count(*) FROM updated) + (SELECT count(*) FROM inserted)
            """, logger: logger)
        var count: Int64 = 0
        for try await value in merged.decode(Int64.self) { count = value }
        // A tag twice for a device (two lines of a token) is skipped by ON CONFLICT as one
        // already there: no DISTINCT (a sort of every tag row) needed.
        try await connection.run(
            """
            INSERT INTO device_tags (app_id, tag, device_id)
            SELECT \(appID), tag, d.id
            FROM device_import i JOIN devices d ON d.app_id = \(appID) AND d.token = i.token, unnest(i.tags) AS tag
            ON CONFLICT DO NOTHING
            """, logger: logger)
        return Int(count)
    }

    /// Takes out of `device_import` every line of a token whose device would carry more than
    /// ``DeviceLimits/maximumTagsPerDevice`` tags after the merge (its own and the lines' tags), or
    /// would join an alias that would then name more than ``DeviceLimits/maximumDevicesPerAlias``
    /// devices; returns each such token's last line with the reason. (The schema's triggers
    /// would refuse the whole merge; this rejects the lines alone.)
    static func rejectLinesOverLimits(appID: UUID, on connection: PostgresConnection, logger: Logger) async throws
        -> [(line: Int, message: String)]
    {
        let tags = DeviceLimits.maximumTagsPerDevice
        let devices = DeviceLimits.maximumDevicesPerAlias
        let rows = try await connection.run(
            """
            WITH latest AS (
                -- Only tokens that add a tag or set an alias can break a limit: a plain import
                -- (no tags, no aliases) costs one scan of its rows here, no sort.
                SELECT DISTINCT ON (token) token, alias, line FROM device_import
                WHERE token IN (
                    SELECT token FROM device_import WHERE alias IS NOT NULL OR cardinality(tags) > 0)
                ORDER BY token, line DESC
            ), current AS (
                SELECT d.id, d.token, d.alias FROM devices d
                WHERE d.app_id = \(appID) AND d.token IN (SELECT token FROM latest)
            ), too_many_tags AS (
                SELECT token FROM (
                    SELECT i.token, tag FROM device_import i, unnest(i.tags) AS tag
                    WHERE i.token IN (SELECT token FROM latest)
                    UNION
                    SELECT c.token, t.tag FROM current c JOIN device_tags t ON t.device_id = c.id
                ) AS every_tag
                GROUP BY token HAVING count(*) > \(tags)
            ), final AS (
                SELECT l.token, l.line, COALESCE(l.alias, c.alias) AS alias,
                       c.alias IS DISTINCT FROM COALESCE(l.alias, c.alias) AS joins
                FROM latest l LEFT JOIN current c ON c.token = l.token
                WHERE l.token NOT IN (SELECT token FROM too_many_tags)
            ), crowded AS (
                SELECT alias FROM (
                    SELECT alias, token FROM final WHERE alias IS NOT NULL
                    UNION
                    SELECT d.alias, d.token FROM devices d
                    WHERE d.app_id = \(appID) AND d.alias IN (SELECT alias FROM final WHERE joins)
                      AND d.token NOT IN (SELECT token FROM latest)
                ) AS named
                GROUP BY alias HAVING count(*) > \(devices)
            ), rejected AS (
                SELECT l.token, l.line, 'the device would carry more than ' || \(tags) || ' tags' AS message
                FROM latest l WHERE l.token IN (SELECT token FROM too_many_tags)
                UNION ALL
                SELECT f.token, f.line, 'alias "' || f.alias || '" would name more than ' || \(devices) || ' devices'
                FROM final f WHERE f.joins AND f.alias IN (SELECT alias FROM crowded)
            ), removed AS (
                DELETE FROM device_import WHERE token IN (SELECT token FROM rejected)
            )
            SELECT line, message FROM rejected ORDER BY line
            """, logger: logger)
        var rejected: [(line: Int, message: String)] = []
        for try await (line, message) in rows.decode((Int64, String).self) { rejected.append((Int(line), message)) }
        return rejected
    }

    /// All devices of `appID`, `limit` at a time after registration id `cursor`.
    public func devices(appID: UUID, after cursor: Int64, limit: Int) async throws -> [Device] {
        let rows = try await client.boundedQuery(
            """
            SELECT \(unescaped: Self.deviceColumns) FROM devices d
            WHERE d.app_id = \(appID) AND d.id > \(cursor) ORDER BY d.id LIMIT \(limit)
            """, logger: logger)
        return try await Self.devices(from: rows)
    }
}

/// One registration of an import, with its line's number in the file (the import's report
/// names it; a token on several lines takes its last).
public struct ImportLine: Sendable {
    public var number: Int
    public var registration: DeviceRegistration

    public init(number: Int, registration: DeviceRegistration) {
        self.number = number
        self.registration = registration
    }
}

/// No connection for an import came from its pool in time; nothing of the import was read.
public struct ImportConnectionUnavailable: Error, CustomStringConvertible {
    public var waited: Duration
    public var description: String { "no database connection for the import within \(waited)" }
}

/// PostgreSQL stopped an import's merge at its `statement_timeout`; nothing of the import was kept.
public struct ImportMergeTimedOut: Error, CustomStringConvertible {
    public var limit: Duration
    public var description: String { "the import's merge ran past \(limit)" }
}

/// Another import of the app is running (in this or another herald-api process).
public struct ImportInProgress: Error, CustomStringConvertible {
    public var appID: UUID
    public var description: String { "an import of app \(appID) is already running" }
}

/// PostgreSQL's COPY text format: columns separated by tabs, `\N` for NULL, backslash escapes.
enum CopyText {
    static func appendRow(_ row: DeviceRegistration, line: Int, to buffer: inout ByteBuffer) {
        buffer.writeString(String(line))
        buffer.writeInteger(UInt8(ascii: "\t"))
        // bytea in hex: \x..., with the backslash escaped for COPY.
        buffer.writeString("\\\\x")
        for byte in row.token {
            buffer.writeInteger(Hexadecimal.digit(byte >> 4))
            buffer.writeInteger(Hexadecimal.digit(byte & 0x0F))
        }
        buffer.writeInteger(UInt8(ascii: "\t"))
        appendField(row.environment.rawValue, to: &buffer)
        buffer.writeInteger(UInt8(ascii: "\t"))
        appendField(row.topic, to: &buffer)
        buffer.writeInteger(UInt8(ascii: "\t"))
        appendField(row.alias, to: &buffer)
        buffer.writeInteger(UInt8(ascii: "\t"))
        appendArray(row.tags, to: &buffer)
        buffer.writeInteger(UInt8(ascii: "\t"))
        appendField(row.locale, to: &buffer)
        buffer.writeInteger(UInt8(ascii: "\t"))
        appendField(row.timeZone, to: &buffer)
        for field in [row.country, row.appVersion, row.osVersion] {
            buffer.writeInteger(UInt8(ascii: "\t"))
            appendField(field, to: &buffer)
        }
        buffer.writeInteger(UInt8(ascii: "\t"))
        appendField(row.attributes.set.isEmpty ? nil : JSONValue.object(row.attributes.set).jsonText, to: &buffer)
        buffer.writeInteger(UInt8(ascii: "\t"))
        appendArray(row.attributes.removed, to: &buffer)
        buffer.writeInteger(UInt8(ascii: "\t"))
        appendField(row.authorizationStatus?.rawValue, to: &buffer)
        buffer.writeInteger(UInt8(ascii: "\n"))
    }

    /// A text[] literal, `{"a","b"}` (quotes and backslashes escaped inside the elements), as a
    /// COPY field (its backslashes escaped again): one pass, no intermediate string.
    static func appendArray(_ values: [String], to buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt8(ascii: "{"))
        for (index, value) in values.enumerated() {
            if index > 0 { buffer.writeInteger(UInt8(ascii: ",")) }
            buffer.writeInteger(UInt8(ascii: "\""))
            appendEscaped(value, to: &buffer) { byte, buffer in
                switch byte {
                // A backslash: two in the array, each doubled for COPY.
                case UInt8(ascii: "\\"): buffer.writeString("\\\\\\\\")
                // A quote: backslash-quote in the array, the backslash doubled for COPY.
                case UInt8(ascii: "\""): buffer.writeString("\\\\\"")
                default: appendCopyEscape(byte, to: &buffer)
                }
            }
            buffer.writeInteger(UInt8(ascii: "\""))
        }
        buffer.writeInteger(UInt8(ascii: "}"))
    }

    static func appendField(_ value: String?, to buffer: inout ByteBuffer) {
        guard let value else {
            buffer.writeString("\\N")
            return
        }
        appendEscaped(value, to: &buffer) { byte, buffer in appendCopyEscape(byte, to: &buffer) }
    }

    /// Writes `value`'s bytes, each backslash, quote, tab, line feed and carriage return through
    /// `escape`: a value with none of them (nearly every one) is written in one copy.
    private static func appendEscaped(
        _ value: String, to buffer: inout ByteBuffer, escape: (UInt8, inout ByteBuffer) -> Void
    ) {
        var value = value
        value.withUTF8 { bytes in
            var start = 0
            for (index, byte) in bytes.enumerated() where needsEscape(byte) {
                buffer.writeBytes(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[start..<index])))
                escape(byte, &buffer)
                start = index + 1
            }
            buffer.writeBytes(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[start...])))
        }
    }

    private static func needsEscape(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "\\") || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\t")
            || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r")
    }

    /// COPY's text format escapes for a backslash and the three control characters it splits
    /// on; anything else as it is.
    private static func appendCopyEscape(_ byte: UInt8, to buffer: inout ByteBuffer) {
        switch byte {
        case UInt8(ascii: "\\"): buffer.writeString("\\\\")
        case UInt8(ascii: "\t"): buffer.writeString("\\t")
        case UInt8(ascii: "\n"): buffer.writeString("\\n")
        case UInt8(ascii: "\r"): buffer.writeString("\\r")
        default: buffer.writeInteger(byte)
        }
    }
}
