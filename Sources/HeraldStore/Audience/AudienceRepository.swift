import Foundation
import Logging
import PostgresNIO

/// Reads audiences: keyset pages of the active devices a push selects, in registration-id order.
///
/// One SQL statement serves every audience: the app, `status = 'active'` and `id > cursor` always
/// apply; each selector the audience has adds one condition (ids or aliases; tags any-of with an
/// `EXISTS`, all-of with a count, none-of with a `NOT EXISTS`; environment; topic; the devices
/// that accepted an earlier push). Pages never use OFFSET, so the millionth row costs what the
/// first did.
public struct AudienceRepository: Sendable {
    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// One page: the devices of `selection` with ids above `cursor`, at most `limit`, in id order.
    /// An empty page is the end; otherwise the last id is the next cursor.
    public func page(_ selection: AudienceSelection, after cursor: Int64, limit: Int) async throws -> [AudienceTarget] {
        let query = Self.query(selection, columns: "d.id, d.token, d.environment, d.topic", after: cursor,
                               tail: "ORDER BY d.id LIMIT", limit: limit)
        let rows = try await client.query(query, logger: logger)
        var targets: [AudienceTarget] = []
        targets.reserveCapacity(limit)
        for try await (id, token, environment, topic) in rows.decode((Int64, ByteBuffer, String, String).self) {
            targets.append(AudienceTarget(deviceID: id, token: token.bytes,
                                          environment: APNsEnvironment(rawValue: environment) ?? .production, topic: topic))
        }
        return targets
    }

    /// How many devices of `selection` have ids above `cursor`.
    public func count(_ selection: AudienceSelection, after cursor: Int64 = 0) async throws -> Int64 {
        let rows = try await client.query(Self.query(selection, columns: "count(*)", after: cursor), logger: logger)
        for try await count in rows.decode(Int64.self) { return count }
        return 0
    }

    /// The statement for `selection`, its values bound as parameters.
    static func query(_ selection: AudienceSelection, columns: String, after cursor: Int64, tail: String? = nil,
                      limit: Int? = nil) -> PostgresQuery {
        var binds = PostgresBindings()
        func bind(_ value: some PostgresNonThrowingEncodable & Sendable) -> String {
            binds.append(value)
            return "$\(binds.count)"
        }
        let app = bind(selection.appID)
        var sql = "SELECT \(columns) FROM devices d WHERE d.app_id = \(app) AND d.status = 'active' AND d.id > \(bind(cursor))"
        let audience = selection.audience
        if let through = selection.throughDevice { sql += " AND d.id <= \(bind(through))" }
        if let environment = audience.environment { sql += " AND d.environment = \(bind(environment.rawValue))" }
        if let topic = selection.topic { sql += " AND d.topic = \(bind(topic))" }
        let ids = audience.registrationIDs ?? []
        let aliases = audience.aliases ?? []
        switch (ids.isEmpty, aliases.isEmpty) {
        case (false, false): sql += " AND (d.id = ANY(\(bind(ids))) OR d.alias = ANY(\(bind(aliases))))"
        case (false, true): sql += " AND d.id = ANY(\(bind(ids)))"
        case (true, false): sql += " AND d.alias = ANY(\(bind(aliases)))"
        case (true, true):
            // No list: everyone if the audience says so or filters by tags; an audience that
            // selects nothing reaches nobody (the API refuses it before).
            if audience.all != true && audience.tags == nil && audience.environment == nil && selection.acceptedByPush == nil { sql += " AND false" }
        }
        if let any = Self.distinct(audience.tags?.any) {
            sql += " AND EXISTS (SELECT 1 FROM device_tags t WHERE t.app_id = \(app) AND t.device_id = d.id AND t.tag = ANY(\(bind(any))))"
        }
        if let all = Self.distinct(audience.tags?.all) {
            sql += " AND (SELECT count(*) FROM device_tags t WHERE t.app_id = \(app) AND t.device_id = d.id AND t.tag = ANY(\(bind(all)))) = \(bind(Int64(all.count)))"
        }
        if let none = Self.distinct(audience.tags?.none) {
            sql += " AND NOT EXISTS (SELECT 1 FROM device_tags t WHERE t.app_id = \(app) AND t.device_id = d.id AND t.tag = ANY(\(bind(none))))"
        }
        if let original = selection.acceptedByPush {
            sql += " AND d.id IN (SELECT unnest(b.accepted_device_ids) FROM push_batches b WHERE b.push_id = \(bind(original)))"
        }
        if let tail { sql += " " + tail }
        if let limit { sql += " \(bind(Int64(limit)))" }
        return PostgresQuery(unsafeSQL: sql, binds: binds)
    }

    private static func distinct(_ tags: [String]?) -> [String]? {
        guard let tags, !tags.isEmpty else { return nil }
        var seen = Set<String>()
        return tags.filter { seen.insert($0).inserted }
    }
}
