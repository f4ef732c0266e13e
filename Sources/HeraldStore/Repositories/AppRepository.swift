import Foundation
import HeraldDomain
import Logging
import PostgresNIO

/// Apps: create, read, rename, delete (which deletes their keys, credentials, devices and pushes).
public struct AppRepository: Sendable {
    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// A new app, with the client key rules of new apps (``ClientKeyRules/init()``: no client tags
    /// or attributes) changed by `rules`, and `audit` appended, in one transaction.
    public func create(
        name: String, bundleID: String, id: UUID = UUID(), rules: Changes = Changes(), audit: AuditEntry? = nil
    ) async throws -> App {
        try await client.transaction(logger: logger) { connection in
            var rows = try await connection.run(
                """
                INSERT INTO apps (id, name, bundle_id) VALUES (\(id), \(name), \(bundleID))
                RETURNING \(unescaped: Self.columns)
                """, logger: logger)
            if !rules.isEmpty { rows = try await connection.run(Self.updating(id: id, rules), logger: logger) }
            if let audit { try await connection.append(audit, logger: logger) }
            return try await Self.first(rows)!
        }
    }

    public func app(id: UUID) async throws -> App? {
        let rows = try await client.boundedQuery(
            "SELECT \(unescaped: Self.columns) FROM apps WHERE id = \(id)", logger: logger)
        return try await Self.first(rows)
    }

    /// Apps whose client keys still follow the rules from before the trust migration (legacy
    /// client access on, or identity verification off): how many, and the bundle ids of the first
    /// `limit` of them.
    public func legacyModeApps(limit: Int = 10) async throws -> (count: Int, bundleIDs: [String]) {
        let rows = try await client.boundedQuery(
            """
            SELECT count(*) OVER (), bundle_id FROM apps WHERE legacy_client_access OR NOT identity_verification
            ORDER BY created_at, id LIMIT \(limit)
            """, logger: logger)
        var count = 0
        var bundleIDs: [String] = []
        for try await (total, bundleID) in rows.decode((Int64, String).self) {
            count = Int(total)
            bundleIDs.append(bundleID)
        }
        return (count, bundleIDs)
    }

    /// Apps in creation order, `limit` at a time after `cursor` (an app id).
    public func list(after cursor: UUID? = nil, limit: Int = 100) async throws -> [App] {
        let rows: ReadRows
        if let cursor {
            rows = try await client.boundedQuery(
                """
                SELECT \(unescaped: Self.columns) FROM apps
                WHERE (created_at, id) > (SELECT created_at, id FROM apps WHERE id = \(cursor))
                ORDER BY created_at, id LIMIT \(limit)
                """, logger: logger)
        } else {
            rows = try await client.boundedQuery(
                "SELECT \(unescaped: Self.columns) FROM apps ORDER BY created_at, id LIMIT \(limit)",
                logger: logger)
        }
        return try await Self.all(rows)
    }

    /// What ``update(id:_:)`` changes; `nil` leaves a field as it is.
    public struct Changes: Sendable {
        public var name: String?
        public var bundleID: String?
        public var identityVerification: Bool?
        public var legacyClientAccess: Bool?
        public var aliasSignaturesV1: Bool?
        /// `.some(nil)` lets client keys set any tag again.
        public var allowedClientTags: [String]??
        /// `.some(nil)` lets client keys set any attribute again.
        public var allowedClientAttributes: [String]??
        /// `.some(nil)` removes the policy.
        public var deliveryPolicy: DeliveryPolicy??

        public init(
            name: String? = nil, bundleID: String? = nil, identityVerification: Bool? = nil,
            legacyClientAccess: Bool? = nil, aliasSignaturesV1: Bool? = nil, allowedClientTags: [String]?? = nil,
            allowedClientAttributes: [String]?? = nil, deliveryPolicy: DeliveryPolicy?? = nil
        ) {
            self.allowedClientAttributes = allowedClientAttributes
            self.aliasSignaturesV1 = aliasSignaturesV1
            self.deliveryPolicy = deliveryPolicy
            self.name = name
            self.bundleID = bundleID
            self.identityVerification = identityVerification
            self.legacyClientAccess = legacyClientAccess
            self.allowedClientTags = allowedClientTags
        }

        var isEmpty: Bool {
            name == nil && bundleID == nil && identityVerification == nil && legacyClientAccess == nil
                && aliasSignaturesV1 == nil && allowedClientTags == nil && allowedClientAttributes == nil
                && deliveryPolicy == nil
        }
    }

    /// Applies `changes`, and appends `audit` with them. Returns `nil` for an unknown app.
    public func update(id: UUID, _ changes: Changes, audit: AuditEntry? = nil) async throws -> App? {
        try await Self.first(client.audited(Self.updating(id: id, changes), audit, logger: logger))
    }

    private static func updating(id: UUID, _ changes: Changes) -> PostgresQuery {
        let changesTags = changes.allowedClientTags != nil
        let tags: [String]? = changes.allowedClientTags ?? nil
        let changesAttributes = changes.allowedClientAttributes != nil
        let attributes: [String]? = changes.allowedClientAttributes ?? nil
        let changesPolicy = changes.deliveryPolicy != nil
        let policy: String? = (changes.deliveryPolicy ?? nil).flatMap { $0.isEmpty ? nil : $0.json }
        return """
            UPDATE apps SET name = COALESCE(\(changes.name), name), bundle_id = COALESCE(\(changes.bundleID), bundle_id),
                            identity_verification = COALESCE(\(changes.identityVerification), identity_verification),
                            legacy_client_access = COALESCE(\(changes.legacyClientAccess), legacy_client_access),
                            alias_signatures_v1 = COALESCE(\(changes.aliasSignaturesV1), alias_signatures_v1),
                            client_tags = CASE WHEN \(changesTags) THEN \(tags)::text[] ELSE client_tags END,
                            client_attributes = CASE WHEN \(changesAttributes) THEN \(attributes)::text[]
                                                ELSE client_attributes END,
                            delivery_policy = CASE WHEN \(changesPolicy) THEN \(policy)::jsonb ELSE delivery_policy END,
                            updated_at = now()
            WHERE id = \(id)
            RETURNING \(unescaped: Self.columns)
            """
    }

    /// Deletes the app with everything it owns (devices, pushes and their outcomes, by the
    /// schema's cascades); returns whether it existed. For an app of millions of devices that is
    /// one long statement: the pool's statement timeout (herald-api's) is lifted for it, so it
    /// ends even after its caller was answered.
    @discardableResult
    public func delete(id: UUID, audit: AuditEntry? = nil) async throws -> Bool {
        try await client.transaction(logger: logger) { connection in
            try await connection.run("SET LOCAL statement_timeout = 0", logger: logger)
            let rows = try await connection.run("DELETE FROM apps WHERE id = \(id) RETURNING id", logger: logger)
            for try await _ in rows.decode(UUID.self) {
                if let audit { try await connection.append(audit, logger: logger) }
                return true
            }
            return false
        }
    }

    static let columns =
        "id, name, bundle_id, created_at, updated_at, identity_verification, legacy_client_access, client_tags, delivery_policy::text, alias_signatures_v1, client_attributes"

    private static func first(_ rows: ReadRows) async throws -> App? {
        try await all(rows).first
    }

    private static func all(_ rows: ReadRows) async throws -> [App] {
        var apps: [App] = []
        for try await (id, name, bundleID, createdAt, updatedAt, verification, legacy, tags, policy, v1, attributes)
            in rows.decode((UUID, String, String, Date, Date, Bool, Bool, [String]?, String?, Bool, [String]?).self)
        {
            apps.append(
                App(
                    id: id, name: name, bundleID: bundleID, createdAt: createdAt, updatedAt: updatedAt,
                    clientRules: ClientKeyRules(
                        identityVerification: verification, legacyAccess: legacy, allowedTags: tags,
                        allowedAttributes: attributes, aliasSignaturesV1: v1),
                    deliveryPolicy: DeliveryPolicy(json: policy)))
        }
        return apps
    }
}
