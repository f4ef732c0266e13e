import Foundation
import HeraldAPNs
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
    /// - Returns: how many devices were registered or refreshed.
    /// - Throws: ``ImportInProgress`` when another import of the app runs.
    public func importDevices<Chunks: AsyncSequence & Sendable>(
        appID: UUID, chunks: Chunks, started: @escaping @Sendable () -> Void = {}
    ) async throws -> Int
    where Chunks.Element == [DeviceRegistration] {
        let imported = try await client.transaction(logger: logger, within: nil) { connection in
            // One import of an app at a time, whichever herald-api runs it.
            let locked = try await connection.query(
                "SELECT pg_try_advisory_xact_lock(hashtextextended('herald-device-import:' || \(appID)::text, 0))",
                logger: logger)
            for try await granted in locked.decode(Bool.self) where !granted { throw ImportInProgress(appID: appID) }
            started()
            try await connection.query(
                """
                CREATE TEMPORARY TABLE device_import (
                    line bigint, token bytea, environment text, topic text, alias text, tags text[], locale text, time_zone text
                ) ON COMMIT DROP
                """, logger: logger)
            try await connection.copyFrom(
                table: "device_import",
                columns: ["line", "token", "environment", "topic", "alias", "tags", "locale", "time_zone"],
                logger: logger
            ) { writer in
                var line = 0
                var buffer = ByteBuffer()
                for try await chunk in chunks {
                    buffer.clear()
                    for row in chunk {
                        line += 1
                        CopyText.appendRow(row, line: line, to: &buffer)
                    }
                    if buffer.readableBytes > 0 { try await writer.write(buffer) }
                }
            }
            let merged = try await connection.query(
                """
                WITH latest AS (
                    SELECT DISTINCT ON (token) token, environment, topic, alias, locale, time_zone
                    FROM device_import ORDER BY token, line DESC
                ), upserted AS (
                    INSERT INTO devices (app_id, token, environment, topic, alias, locale, time_zone)
                    SELECT \(appID), token, environment, topic, alias, locale, time_zone FROM latest
                    ON CONFLICT (app_id, token) DO UPDATE SET
                        environment = EXCLUDED.environment, topic = EXCLUDED.topic,
                        alias = COALESCE(EXCLUDED.alias, devices.alias),
                        locale = COALESCE(EXCLUDED.locale, devices.locale),
                        time_zone = COALESCE(EXCLUDED.time_zone, devices.time_zone),
                        status = 'active', invalidated_at = NULL, invalid_reason = NULL,
                        registered_at = now(), updated_at = now()
                    RETURNING id
                )
                SELECT count(*) FROM upserted
                """, logger: logger)
            var count: Int64 = 0
            for try await value in merged.decode(Int64.self) { count = value }
            try await connection.query(
                """
                INSERT INTO device_tags (app_id, tag, device_id)
                SELECT DISTINCT \(appID), tag, d.id
                FROM device_import i JOIN devices d ON d.app_id = \(appID) AND d.token = i.token, unnest(i.tags) AS tag
                ON CONFLICT DO NOTHING
                """, logger: logger)
            return Int(count)
        }
        // A bulk import can multiply the tables' size before autovacuum's next look; without
        // fresh statistics the planner treats them as small and the next fan-out's tag query
        // picks a nested loop that runs for minutes (seen: 70 s for 100,000 devices, 25 ms after).
        if imported >= 1_000 {
            try await client.boundedQuery("ANALYZE devices, device_tags", logger: logger)
        }
        return imported
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
        appendField(arrayLiteral(row.tags), to: &buffer)
        buffer.writeInteger(UInt8(ascii: "\t"))
        appendField(row.locale, to: &buffer)
        buffer.writeInteger(UInt8(ascii: "\t"))
        appendField(row.timeZone, to: &buffer)
        buffer.writeInteger(UInt8(ascii: "\n"))
    }

    /// A text[] literal: `{"a","b"}` with quotes and backslashes escaped.
    static func arrayLiteral(_ values: [String]) -> String {
        "{"
            + values.map { value in
                "\"" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
                    + "\""
            }.joined(separator: ",") + "}"
    }

    static func appendField(_ value: String?, to buffer: inout ByteBuffer) {
        guard let value else {
            buffer.writeString("\\N")
            return
        }
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\\"): buffer.writeString("\\\\")
            case UInt8(ascii: "\t"): buffer.writeString("\\t")
            case UInt8(ascii: "\n"): buffer.writeString("\\n")
            case UInt8(ascii: "\r"): buffer.writeString("\\r")
            default: buffer.writeInteger(byte)
            }
        }
    }
}
