import Foundation
import HeraldAPNsVocabulary
import HeraldCore
import HeraldDomain
import HeraldPostgresCopy
import HeraldRecords
import Logging
import PostgresNIO

/// Reads audiences: keyset pages of the active devices a push selects, in registration-id order,
/// and for a fan-out the whole audience as one `COPY` stream cut into pages.
///
/// One SQL statement serves every audience: the app, `status = 'active'` and `id > cursor` always
/// apply; each selector the audience has adds one condition (ids or aliases; tags any-of with an
/// `EXISTS`, all-of with a count, none-of with a `NOT EXISTS`; environment; topic; the devices
/// that accepted an earlier push). Pages never use OFFSET, so the millionth row costs what the
/// first did.
public struct AudienceRepository: Sendable {
    let client: PostgresClient
    let copySettings: PostgresCopyConnection.Settings?
    let logger: Logger

    /// - Parameter postgres: where ``stream(_:after:pageSize:)`` opens its libpq connection;
    ///   without it only pages and counts can be read.
    public init(client: PostgresClient, postgres: PostgresSettings? = nil, logger: Logger) {
        self.client = client
        self.copySettings = postgres.map {
            PostgresCopyConnection.Settings(
                host: $0.host, port: $0.port, user: $0.user, password: $0.password,
                database: $0.database, applicationName: "\($0.applicationName)-audience",
                extraParameters: $0.tls.libpqParameters)
        }
        self.logger = logger
    }

    static let columns = "d.id, d.token, d.environment, d.topic"

    /// A device's language: its locale's first part, lower case (`de_AT` → `de`). Filters and
    /// templates read it alike.
    static let languageSQL = "lower(split_part(replace(d.locale, '_', '-'), '-', 1))"

    /// The device columns and the selection's personalization values.
    static func columns(_ selection: AudienceSelection, values: inout some AudienceQueryValues) -> String {
        guard !selection.personalization.isEmpty else { return columns }
        return ([columns] + selection.personalization.map { $0.sql(values: &values) }).joined(separator: ", ")
    }

    /// One page: the devices of `selection` with ids above `cursor`, at most `limit`, in id order.
    /// An empty page is the end; otherwise the last id is the next cursor.
    public func page(_ selection: AudienceSelection, after cursor: Int64, limit: Int) async throws -> AudiencePage {
        var values = BoundValues()
        let columns = Self.columns(selection, values: &values)
        let sql = Self.sql(
            selection, columns: columns, after: cursor, tail: "ORDER BY d.id", limit: limit, values: &values)
        let rows = try await client.boundedQuery(PostgresQuery(unsafeSQL: sql, binds: values.binds), logger: logger)
            .rows
        let fields = selection.personalization.count
        var page = AudiencePage(devices: DeviceTokens(reservingCapacity: rows.count, valuesPerDevice: fields))
        for row in rows {
            let cells = row.makeRandomAccess()
            let (id, token, environment, topic) = try row.decode((Int64, ByteBuffer, String, String).self)
            let group = page.group(
                AudienceGroup(environment: APNsEnvironment(rawValue: environment) ?? .production, topic: topic))
            page.append(deviceID: id, token: token.readableBytesView, group: group)
            for field in 0..<fields {
                page.devices.appendValue(cells[4 + field].bytes?.readableBytesView)
            }
        }
        return page
    }

    /// How many devices of `selection` have ids above `cursor`.
    public func count(_ selection: AudienceSelection, after cursor: Int64 = 0) async throws -> Int64 {
        let rows = try await client.boundedQuery(Self.countQuery(selection, after: cursor), logger: logger)
        for try await count in rows.decode(Int64.self) { return count }
        return 0
    }

    /// How many devices of `selection` each time zone has (`""`: devices without one), for
    /// planning a push's waves (docs/local-time.md).
    public func timeZoneGroups(_ selection: AudienceSelection) async throws -> [(timeZone: String, devices: Int64)] {
        var values = BoundValues()
        let sql = Self.sql(
            selection, columns: "COALESCE(d.time_zone, ''), count(*)", after: 0, tail: "GROUP BY 1", values: &values)
        let rows = try await client.boundedQuery(PostgresQuery(unsafeSQL: sql, binds: values.binds), logger: logger)
        var groups: [(timeZone: String, devices: Int64)] = []
        for try await (zone, devices) in rows.decode((String, Int64).self) { groups.append((zone, devices)) }
        return groups
    }

    /// A sample of `selection`'s devices by time zone, each device as likely to be in it as any
    /// other, read at a cost that does not grow with a broadcast's audience. The app's span of
    /// device ids is cut into `slices` equal slices, and a run of ids from a random place in each
    /// slice is read (through the `(app_id, id)` index), as many as make about `sampleSize` devices of an
    /// audience of `audienceSize` spread over the span: `sampleSize × span ÷ audienceSize` ids in
    /// all. A sparse audience (a rare tag) reads more of the span, never more than all of it.
    /// - Returns: the sampled devices by time zone; their shares are the estimate.
    public func sampledTimeZoneGroups(
        _ selection: AudienceSelection, audienceSize: Int64, sampleSize: Int, slices: Int
    ) async throws -> [(timeZone: String, devices: Int64)] {
        var values = BoundValues()
        let app = values.value(selection.appID)
        let count = values.value(Int64(max(1, slices)))
        let wanted = values.value(Int64(max(1, sampleSize)))
        let size = values.value(max(1, audienceSize))
        // The slice's bounds come from the row of `slices`; the audience's own conditions, then
        // the slice's read part, close the statement Self.sql builds (its cursor 0 is below every id).
        let inner = Self.sql(
            selection, columns: "d.time_zone", after: 0,
            tail: "AND d.id > slices.start AND d.id <= LEAST(slices.high, slices.start + slices.read)", values: &values)
        let sql = """
            WITH span AS (
                SELECT (SELECT id FROM devices WHERE app_id = \(app) AND status = 'active' ORDER BY id LIMIT 1) AS low,
                       (SELECT id FROM devices WHERE app_id = \(app) AND status = 'active' ORDER BY id DESC LIMIT 1)
                           AS high),
            bounds AS (
                SELECT span.low - 1 + (span.high - span.low + 1) * g / \(count) AS low,
                       span.low - 1 + (span.high - span.low + 1) * (g + 1) / \(count) AS high,
                       GREATEST(1, ceil(\(wanted)::numeric * (span.high - span.low + 1) / (\(size) * \(count))))::bigint
                           AS read
                FROM span, generate_series(0, \(count) - 1) AS g WHERE span.high IS NOT NULL),
            slices AS (
                -- Where in its slice the read part starts: at random, so that registrations in
                -- a rhythm (a zone every so many ids) are not read in step with the slices.
                SELECT low, high, read, low + floor(random() * GREATEST(0, high - low - read + 1))::bigint AS start
                FROM bounds)
            SELECT COALESCE(sampled.time_zone, ''), count(*) FROM slices CROSS JOIN LATERAL (\(inner)) AS sampled
            GROUP BY 1
            """
        let query = PostgresQuery(unsafeSQL: sql, binds: values.binds)
        return try await client.transaction(logger: logger) { [logger] connection in
            // The planner cannot know how few ids each slice reads and prices the statement high
            // enough to compile it first (JIT): 0.7 s of compiling for 40 ms of reading.
            try await connection.run("SET LOCAL jit = off", logger: logger)
            let rows = try await connection.run(query, logger: logger)
            var groups: [(timeZone: String, devices: Int64)] = []
            for try await (zone, devices) in rows.decode((String, Int64).self) { groups.append((zone, devices)) }
            return groups
        }
    }

    /// How many devices `selection` holds, counted exactly up to `exactUpTo`; past it, PostgreSQL's
    /// planner's estimate (at least `exactUpTo + 1`), so the answer's cost is bounded whatever the
    /// audience's size.
    /// - Returns: the number, and whether it is an estimate.
    public func boundedCount(_ selection: AudienceSelection, exactUpTo: Int64) async throws -> (
        count: Int64, estimated: Bool
    ) {
        var values = BoundValues()
        let inner = Self.sql(selection, columns: "1", after: 0, limit: Int(exactUpTo) + 1, values: &values)
        let rows = try await client.boundedQuery(
            PostgresQuery(unsafeSQL: "SELECT count(*) FROM (\(inner)) AS audience", binds: values.binds),
            logger: logger)
        var counted: Int64 = 0
        for try await count in rows.decode(Int64.self) { counted = count }
        guard counted > exactUpTo else { return (counted, false) }
        var planValues = BoundValues()
        let whole = Self.sql(selection, columns: "1", after: 0, values: &planValues)
        let plan = try await client.boundedQuery(
            PostgresQuery(unsafeSQL: "EXPLAIN (FORMAT JSON) \(whole)", binds: planValues.binds), logger: logger)
        var estimate = exactUpTo + 1
        for try await text in plan.decode(String.self) {
            let json = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]]
            if let rows = (json?.first?["Plan"] as? [String: Any])?["Plan Rows"] as? NSNumber {
                estimate = max(estimate, rows.int64Value)
            }
        }
        return (estimate, true)
    }

    /// The statement that counts the devices of `selection` above `cursor`.
    static func countQuery(_ selection: AudienceSelection, after cursor: Int64) -> PostgresQuery {
        var values = BoundValues()
        let sql = Self.sql(selection, columns: "count(*)", after: cursor, values: &values)
        return PostgresQuery(unsafeSQL: sql, binds: values.binds)
    }

    /// The statement that lists the ids of the devices of `selection` above `cursor`.
    static func idQuery(_ selection: AudienceSelection, after cursor: Int64) -> PostgresQuery {
        var values = BoundValues()
        let sql = Self.sql(selection, columns: "d.id", after: cursor, values: &values)
        return PostgresQuery(unsafeSQL: sql, binds: values.binds)
    }

    /// The devices of `selection` above `cursor`, in id order, as pages of `pageSize` read ahead
    /// from one `COPY … TO STDOUT (FORMAT binary)` on a libpq connection and thread of their own
    /// (at most two pages wait unread: memory stays flat whatever the audience's size).
    ///
    /// Ending the iteration early cancels the statement and closes the connection.
    /// - Throws: (from the iteration) ``PostgresCopyError`` when PostgreSQL cannot be reached or
    ///   the statement fails; ``AudienceStreamUnavailable`` when this repository has no settings
    ///   for a libpq connection.
    public func stream(_ selection: AudienceSelection, after cursor: Int64, pageSize: Int) -> AudienceStream {
        AudienceStream(
            settings: copySettings, query: Self.copyStatement(selection, after: cursor), pageSize: max(1, pageSize),
            valuesPerDevice: selection.personalization.count)
    }

    /// The statement the fan-out's COPY runs for `selection` (its values written in), for
    /// references that read the same rows with another client (the fan-out benchmark's psql).
    public static func copyStatement(_ selection: AudienceSelection, after cursor: Int64 = 0) -> String {
        var values = LiteralValues()
        let columns = Self.columns(selection, values: &values)
        return sql(selection, columns: columns, after: cursor, tail: "ORDER BY d.id", values: &values)
    }

    /// The statement for `selection`; `values` writes each value in (a bind parameter or a literal).
    static func sql(
        _ selection: AudienceSelection, columns: String, after cursor: Int64, tail: String? = nil,
        limit: Int? = nil, values: inout some AudienceQueryValues
    ) -> String {
        let app = values.value(selection.appID)
        var sql =
            "SELECT \(columns) FROM devices d WHERE d.app_id = \(app) AND d.status = 'active' AND d.id > \(values.value(cursor))"
        let audience = selection.audience
        if let through = selection.throughDevice { sql += " AND d.id <= \(values.value(through))" }
        if let environment = audience.environment {
            sql += " AND d.environment = \(values.value(environment.rawValue))"
        }
        if let topic = selection.topic { sql += " AND d.topic = \(values.value(topic))" }
        if let zones = selection.timeZones { sql += " AND COALESCE(d.time_zone, '') = ANY(\(values.value(zones)))" }
        let ids = audience.registrationIDs ?? []
        let aliases = audience.aliases ?? []
        switch (ids.isEmpty, aliases.isEmpty) {
        case (false, false): sql += " AND (d.id = ANY(\(values.value(ids))) OR d.alias = ANY(\(values.value(aliases))))"
        case (false, true): sql += " AND d.id = ANY(\(values.value(ids)))"
        case (true, false): sql += " AND d.alias = ANY(\(values.value(aliases)))"
        case (true, true):
            // No list: everyone if the audience says so or filters by tags; an audience that
            // selects nothing reaches nobody (the API refuses it before).
            if audience.all != true && audience.tags == nil && audience.environment == nil && audience.filter == nil
                && selection.acceptedByPush == nil
            {
                sql += " AND false"
            }
        }
        if let any = Self.distinct(audience.tags?.any) {
            sql +=
                " AND EXISTS (SELECT 1 FROM device_tags t WHERE t.app_id = \(app) AND t.device_id = d.id AND t.tag = ANY(\(values.value(any))))"
        }
        if let all = Self.distinct(audience.tags?.all) {
            sql +=
                " AND (SELECT count(*) FROM device_tags t WHERE t.app_id = \(app) AND t.device_id = d.id AND t.tag = ANY(\(values.value(all)))) = \(values.value(Int64(all.count)))"
        }
        if let none = Self.distinct(audience.tags?.none) {
            sql +=
                " AND NOT EXISTS (SELECT 1 FROM device_tags t WHERE t.app_id = \(app) AND t.device_id = d.id AND t.tag = ANY(\(values.value(none))))"
        }
        if let filter = audience.filter { sql += " AND " + Self.condition(filter, app: app, values: &values) }
        if let original = selection.acceptedByPush {
            sql +=
                " AND d.id IN (SELECT unnest(b.accepted_device_ids || COALESCE(b.delivered_online_device_ids, '{}')) FROM push_batches b WHERE b.push_id = \(values.value(original)))"
        }
        if let tail { sql += " " + tail }
        if let limit { sql += " LIMIT \(values.value(Int64(limit)))" }
        return sql
    }

    private static func distinct(_ tags: [String]?) -> [String]? {
        guard let tags, !tags.isEmpty else { return nil }
        var seen = Set<String>()
        return tags.filter { seen.insert($0).inserted }
    }
}

/// How the audience statement carries its values: bind parameters for postgres-nio, literals
/// for COPY (which takes no parameters).
protocol AudienceQueryValues {
    mutating func value(_ value: Int64) -> String
    mutating func value(_ value: String) -> String
    mutating func value(_ value: UUID) -> String
    mutating func value(_ value: [Int64]) -> String
    mutating func value(_ value: [String]) -> String
    /// `expression` (of values only) computed once per statement: as it is for bound parameters
    /// (the planner folds it), a scalar subquery (an InitPlan) for literals, whose decoding would
    /// otherwise run on every row.
    mutating func once(_ expression: String) -> String
}

/// Values as `$n` parameters.
struct BoundValues: AudienceQueryValues {
    var binds = PostgresBindings()

    private mutating func bind(_ value: some PostgresNonThrowingEncodable & Sendable) -> String {
        binds.append(value)
        return "$\(binds.count)"
    }

    mutating func value(_ value: Int64) -> String { bind(value) }
    mutating func value(_ value: String) -> String { bind(value) }
    mutating func value(_ value: UUID) -> String { bind(value) }
    mutating func value(_ value: [Int64]) -> String { bind(value) }
    mutating func value(_ value: [String]) -> String { bind(value) }
    mutating func once(_ expression: String) -> String { expression }
}

/// Values written into the statement. Safe by construction: numbers and UUIDs are printed by
/// Swift, and every string travels as the hex of its UTF-8 bytes, decoded by PostgreSQL — no
/// character of a caller's string ever reaches the SQL text.
struct LiteralValues: AudienceQueryValues {
    mutating func value(_ value: Int64) -> String { "\(value)::bigint" }
    mutating func value(_ value: UUID) -> String { "'\(value.uuidString)'::uuid" }
    mutating func value(_ value: [Int64]) -> String {
        "ARRAY[\(value.map(String.init).joined(separator: ","))]::bigint[]"
    }
    mutating func value(_ value: [String]) -> String { "ARRAY[\(value.map(Self.text).joined(separator: ","))]::text[]" }
    mutating func value(_ value: String) -> String { Self.text(value) }
    mutating func once(_ expression: String) -> String { "(SELECT \(expression))" }

    static func text(_ value: String) -> String {
        "convert_from(decode('\(Hexadecimal.encode(value.utf8))', 'hex'), 'UTF8')"
    }
}
