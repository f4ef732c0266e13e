import Foundation
import HeraldAPNsVocabulary
import HeraldDomain
import Logging
import PostgresNIO

/// Devices: registration, aliases and tags, the token lifecycle (audiences: `AudienceRepository`).
public struct DeviceRepository: Sendable {
    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// The result of a registration.
    public struct Registered: Sendable, Equatable {
        /// The registration id; the same for the same token of the same app, however often it
        /// registers.
        public var id: Int64
        /// The token was not known before.
        public var isNew: Bool
    }

    /// How a known device is refreshed by a registration or an imported line — the one rule for
    /// the SET list of all three (registration, an import's update of known tokens, and an
    /// import's insert that meets a token registered meanwhile): the environment and topic are
    /// replaced, the alias and the profile fields are replaced only when given (absent ones are
    /// kept), and the device is active again, registered now. `existing` and `incoming` name the
    /// device's row and the new values' (`devices`/`EXCLUDED`, `d`/`l`). The attributes are merged
    /// by `herald_merge_attributes`, written beside it by each caller, which knows where the
    /// removed names come from.
    ///
    /// A SQL fragment rather than a function called per row: an import refreshes up to millions
    /// of rows in one statement, and a function returning a row is not inlined there.
    static func refreshSQL(existing: String, incoming: String) -> String {
        let coalesced = ["alias", "locale", "time_zone", "country", "app_version", "os_version"]
            .map { "\($0) = COALESCE(\(incoming).\($0), \(existing).\($0))" }
        return
            (["environment = \(incoming).environment", "topic = \(incoming).topic"] + coalesced + [
                "status = 'active', invalidated_at = NULL, invalid_reason = NULL",
                "registered_at = now(), updated_at = now()",
            ]).joined(separator: ",\n")
    }

    /// Registers a token, or refreshes it: a known token keeps its registration id, is
    /// reactivated if it was invalid, takes the new environment and topic, the alias, locale and
    /// time zone given (absent ones are kept), and gains the tags given.
    /// - Throws: ``DeviceLimits/Exceeded`` when the device would carry too many tags or its
    ///   alias name too many devices (nothing changed).
    public func register(_ registration: DeviceRegistration) async throws -> Registered {
        try await DeviceLimits.enforced {
            try await client.transaction(logger: logger) { connection in
                var registration = registration
                let retired = try await Self.retirePrevious(of: &registration, on: connection, logger: logger)
                let rows = try await connection.run(
                    """
                    INSERT INTO devices (app_id, token, environment, topic, alias, locale, time_zone, country, app_version,
                                         os_version, attributes, authorization_status)
                    VALUES (\(registration.appID), \(registration.token.bytea), \(registration.environment.rawValue),
                            \(registration.topic), \(registration.alias), \(registration.locale), \(registration.timeZone),
                            \(registration.country), \(registration.appVersion), \(registration.osVersion),
                            herald_merge_attributes(
                                \(retired?.attributes)::jsonb,
                                \(registration.attributes.set.isEmpty ? nil : JSONValue.object(registration.attributes.set).jsonText)::jsonb,
                                \(registration.attributes.removed)::text[]),
                            \(registration.authorizationStatus?.rawValue))
                    ON CONFLICT (app_id, token) DO UPDATE SET
                        authorization_status = COALESCE(EXCLUDED.authorization_status, devices.authorization_status),
                        attributes = herald_merge_attributes(
                            devices.attributes, EXCLUDED.attributes, \(registration.attributes.removed)::text[]),
                        \(unescaped: Self.refreshSQL(existing: "devices", incoming: "EXCLUDED"))
                    RETURNING id, (xmax = 0) AS inserted
                    """, logger: logger)
                var registered: Registered?
                for try await (id, inserted) in rows.decode((Int64, Bool).self) {
                    registered = Registered(id: id, isNew: inserted)
                }
                guard let registered else { throw StoreError(message: "device registration returned no row") }
                if let retired {
                    try await Self.moveTags(from: retired.id, to: registered.id, on: connection, logger: logger)
                }
                if !registration.tags.isEmpty {
                    try await Self.insertTags(
                        registration.tags, deviceID: registered.id, appID: registration.appID, on: connection,
                        logger: logger)
                }
                return registered
            }
        }
    }

    /// What a rotated token's registration carried, read as it was retired.
    struct RetiredDevice {
        var id: Int64
        /// Its custom attributes as JSON text, merged under the new registration's.
        var attributes: String?
    }

    /// Retires `registration.previousToken`'s device (status `invalid`, reason `token_rotated`,
    /// alias released) and fills what `registration` leaves out from it: alias (when
    /// ``DeviceRegistration/carriesAlias``), locale, time zone, country, versions, authorization
    /// status. Nil when there is no previous token, the app has no device with it, or it was
    /// retired by a rotation already.
    static func retirePrevious(
        of registration: inout DeviceRegistration, on connection: PostgresConnection, logger: Logger
    ) async throws -> RetiredDevice? {
        guard let previous = registration.previousToken, previous != registration.token else { return nil }
        // The old values are read (and the row locked) before the update releases the alias.
        let rows = try await connection.run(
            """
            WITH old AS (
                SELECT id, alias, locale, time_zone, country, app_version, os_version, attributes, authorization_status
                FROM devices WHERE app_id = \(registration.appID) AND token = \(previous.bytea)
                -- Retired by an earlier try (its answer lost): its stale profile is not carried again.
                  AND invalid_reason IS DISTINCT FROM 'token_rotated'
                FOR UPDATE
            ), retired AS (
                UPDATE devices d SET status = 'invalid', invalid_reason = 'token_rotated', invalidated_at = now(),
                                     alias = NULL, updated_at = now()
                FROM old WHERE d.id = old.id
                RETURNING d.id
            )
            SELECT old.id, old.alias, old.locale, old.time_zone, old.country, old.app_version, old.os_version,
                   old.attributes::text, old.authorization_status
            FROM old JOIN retired USING (id)
            """, logger: logger)
        var retired: RetiredDevice?
        for try await row in rows.decode(
            (Int64, String?, String?, String?, String?, String?, String?, String?, String?).self)
        {
            let (id, alias, locale, timeZone, country, appVersion, osVersion, attributes, authorization) = row
            if registration.carriesAlias { registration.alias = registration.alias ?? alias }
            registration.locale = registration.locale ?? locale
            registration.timeZone = registration.timeZone ?? timeZone
            registration.country = registration.country ?? country
            registration.appVersion = registration.appVersion ?? appVersion
            registration.osVersion = registration.osVersion ?? osVersion
            registration.authorizationStatus =
                registration.authorizationStatus ?? authorization.flatMap(AuthorizationStatus.init(rawValue:))
            retired = RetiredDevice(id: id, attributes: attributes)
        }
        return retired
    }

    /// Moves a retired device's tags to the device that replaced it.
    static func moveTags(from retired: Int64, to device: Int64, on connection: PostgresConnection, logger: Logger)
        async throws
    {
        try await connection.run(
            """
            WITH moved AS (DELETE FROM device_tags WHERE device_id = \(retired) RETURNING app_id, tag)
            INSERT INTO device_tags (app_id, tag, device_id) SELECT app_id, tag, \(device) FROM moved
            ON CONFLICT DO NOTHING
            """, logger: logger)
    }

    /// The device with registration id `id`, if it belongs to `appID`.
    public func device(id: Int64, appID: UUID) async throws -> Device? {
        let rows = try await client.boundedQuery(
            """
            SELECT \(unescaped: Self.deviceColumns) FROM devices d WHERE d.id = \(id) AND d.app_id = \(appID)
            """, logger: logger)
        return try await Self.devices(from: rows).first
    }

    /// The device of `appID` with `token`: how a client key, which proves it holds the device by
    /// its token, addresses it.
    public func device(token: [UInt8], appID: UUID) async throws -> Device? {
        let rows = try await client.boundedQuery(
            """
            SELECT \(unescaped: Self.deviceColumns) FROM devices d
            WHERE d.app_id = \(appID) AND d.token = \(token.bytea)
            """, logger: logger)
        return try await Self.devices(from: rows).first
    }

    /// The devices of `appID` with `alias`, in registration order.
    public func devices(alias: String, appID: UUID, limit: Int = 100) async throws -> [Device] {
        let rows = try await client.boundedQuery(
            """
            SELECT \(unescaped: Self.deviceColumns) FROM devices d
            WHERE d.app_id = \(appID) AND d.alias = \(alias) ORDER BY d.id LIMIT \(limit)
            """, logger: logger)
        return try await Self.devices(from: rows)
    }

    /// Devices of `appID` whose token is at least `lower` and below `upper` (no bound when nil), in
    /// token order: a range of the (app_id, token) index, so a token prefix costs a few pages
    /// however many devices the app has.
    public func devices(tokensFrom lower: [UInt8], below upper: [UInt8]?, appID: UUID, limit: Int) async throws
        -> [Device]
    {
        // Both bounds as index conditions (an `upper IS NULL OR` would leave the upper one a
        // filter, and a prefix nobody has would scan the rest of the app's tokens).
        let rows =
            if let upper {
                try await client.boundedQuery(
                    """
                    SELECT \(unescaped: Self.deviceColumns) FROM devices d
                    WHERE d.app_id = \(appID) AND d.token >= \(lower.bytea) AND d.token < \(upper.bytea)
                    ORDER BY d.token LIMIT \(limit)
                    """, logger: logger)
            } else {
                try await client.boundedQuery(
                    """
                    SELECT \(unescaped: Self.deviceColumns) FROM devices d
                    WHERE d.app_id = \(appID) AND d.token >= \(lower.bytea) ORDER BY d.token LIMIT \(limit)
                    """, logger: logger)
            }
        return try await Self.devices(from: rows)
    }

    /// Devices of `appID` carrying `tag`, `limit` at a time after registration id `cursor`.
    public func devices(tag: String, appID: UUID, after cursor: Int64 = 0, limit: Int = 100) async throws -> [Device] {
        let rows = try await client.boundedQuery(
            """
            SELECT \(unescaped: Self.deviceColumns) FROM device_tags t JOIN devices d ON d.id = t.device_id
            WHERE t.app_id = \(appID) AND t.tag = \(tag) AND t.device_id > \(cursor)
            ORDER BY t.device_id LIMIT \(limit)
            """, logger: logger)
        return try await Self.devices(from: rows)
    }

    /// Sets (or with `nil` removes) the alias. Returns whether the device exists.
    @discardableResult
    /// - Throws: ``DeviceLimits/Exceeded`` when the alias would name too many devices.
    public func setAlias(_ alias: String?, deviceID: Int64, appID: UUID) async throws -> Bool {
        try await DeviceLimits.enforced {
            let rows = try await client.boundedQuery(
                """
                UPDATE devices SET alias = \(alias), updated_at = now()
                WHERE id = \(deviceID) AND app_id = \(appID) RETURNING id
                """, logger: logger)
            var found = false
            for try await _ in rows.decode(Int64.self) { found = true }
            return found
        }
    }

    /// Adds and removes tags of a device in one transaction. Returns whether the device exists.
    @discardableResult
    /// - Throws: ``DeviceLimits/Exceeded`` when the device would carry too many tags.
    public func updateTags(adding: [String], removing: [String], deviceID: Int64, appID: UUID) async throws -> Bool {
        try await DeviceLimits.enforced {
            try await client.transaction(logger: logger) { connection in
                let rows = try await connection.run(
                    "UPDATE devices SET updated_at = now() WHERE id = \(deviceID) AND app_id = \(appID) RETURNING id",
                    logger: logger)
                var found = false
                for try await _ in rows.decode(Int64.self) { found = true }
                guard found else { return false }
                if !removing.isEmpty {
                    try await connection.run(
                        """
                        DELETE FROM device_tags WHERE app_id = \(appID) AND device_id = \(deviceID) AND tag = ANY(\(removing))
                        """, logger: logger)
                }
                if !adding.isEmpty {
                    try await Self.insertTags(adding, deviceID: deviceID, appID: appID, on: connection, logger: logger)
                }
                return true
            }
        }
    }

    /// Sets what the device says about itself: the values given (nil ones stay), custom
    /// attributes merged (`attributes.removed` ones go). Returns whether the device exists.
    @discardableResult
    public func describe(
        deviceID: Int64, appID: UUID, country: String?, appVersion: String?, osVersion: String?,
        attributes: (set: [String: JSONValue], removed: [String]), authorizationStatus: AuthorizationStatus? = nil
    ) async throws -> Bool {
        try await DeviceLimits.enforced {
            let rows = try await client.boundedQuery(
                """
                UPDATE devices SET country = COALESCE(\(country), country),
                    app_version = COALESCE(\(appVersion), app_version), os_version = COALESCE(\(osVersion), os_version),
                    authorization_status = COALESCE(\(authorizationStatus?.rawValue), authorization_status),
                    attributes = herald_merge_attributes(
                        attributes, \(JSONValue.object(attributes.set).jsonText)::jsonb, \(attributes.removed)::text[]),
                    updated_at = now()
                WHERE id = \(deviceID) AND app_id = \(appID)
                RETURNING id
                """, logger: logger)
            for try await _ in rows.decode(Int64.self) { return true }
            return false
        }
    }

    /// Deletes a device and its tags. Returns whether it existed.
    @discardableResult
    public func delete(id: Int64, appID: UUID) async throws -> Bool {
        let rows = try await client.boundedQuery(
            "DELETE FROM devices WHERE id = \(id) AND app_id = \(appID) RETURNING id", logger: logger)
        for try await _ in rows.decode(Int64.self) { return true }
        return false
    }

    // MARK: Retention of invalid tokens

    /// Deletes devices invalid since before `cutoff`. Returns how many.
    public func purgeInvalid(before cutoff: Date) async throws -> Int {
        let rows = try await client.boundedQuery(
            """
            WITH purged AS (DELETE FROM devices WHERE status = 'invalid' AND invalidated_at < \(cutoff) RETURNING 1)
            SELECT count(*) FROM purged
            """, logger: logger)
        for try await count in rows.decode(Int64.self) { return Int(count) }
        return 0
    }

    // MARK: Helpers

    static let deviceColumns = """
        d.id, d.app_id, d.token, d.environment, d.topic, d.alias, \
        ARRAY(SELECT t.tag FROM device_tags t WHERE t.device_id = d.id ORDER BY t.tag), \
        d.locale, d.time_zone, d.status, d.registered_at, d.updated_at, d.invalidated_at, d.invalid_reason, \
        d.country, d.app_version, d.os_version, COALESCE(d.first_registered_at, d.registered_at), d.attributes::text, \
        d.authorization_status
        """

    static func devices(from rows: ReadRows) async throws -> [Device] {
        var devices: [Device] = []
        for try await row in rows {
            let cells = row.makeRandomAccess()
            let attributes = try cells[18].decode(String?.self).flatMap { text -> [String: JSONValue]? in
                guard case .object(let fields) = try? JSONValue(jsonText: text) else { return nil }
                return fields
            }
            var device =
                Device(
                    id: try cells[0].decode(Int64.self), appID: try cells[1].decode(UUID.self),
                    token: try cells[2].decode(ByteBuffer.self).bytes,
                    environment: APNsEnvironment(rawValue: try cells[3].decode(String.self)) ?? .production,
                    topic: try cells[4].decode(String.self), alias: try cells[5].decode(String?.self),
                    tags: try cells[6].decode([String].self), locale: try cells[7].decode(String?.self),
                    timeZone: try cells[8].decode(String?.self),
                    status: DeviceStatus(rawValue: try cells[9].decode(String.self)) ?? .active,
                    registeredAt: try cells[10].decode(Date.self), updatedAt: try cells[11].decode(Date.self),
                    invalidatedAt: try cells[12].decode(Date?.self), invalidReason: try cells[13].decode(String?.self),
                    country: try cells[14].decode(String?.self), appVersion: try cells[15].decode(String?.self),
                    osVersion: try cells[16].decode(String?.self), firstRegisteredAt: try cells[17].decode(Date.self),
                    attributes: attributes ?? [:])
            device.authorizationStatus = try cells[19].decode(String?.self).flatMap(AuthorizationStatus.init)
            devices.append(device)
        }
        return devices
    }

    static func insertTags(
        _ tags: [String], deviceID: Int64, appID: UUID, on connection: PostgresConnection,
        logger: Logger
    ) async throws {
        try await connection.run(
            """
            INSERT INTO device_tags (app_id, tag, device_id)
            SELECT \(appID), tag, \(deviceID) FROM unnest(\(tags)::text[]) AS tag
            ON CONFLICT DO NOTHING
            """, logger: logger)
    }
}

/// Limits on what one device or alias holds (docs/limits.md).
///
/// PostgreSQL enforces them (`Schemas/postgres/0007_device_limits.sql`), on every path that
/// writes devices and tags; these numbers are the same, for checks of a request before it is
/// written and for messages.
public enum DeviceLimits {
    public static let maximumTagsPerDevice = 100
    public static let maximumDevicesPerAlias = 100

    /// A write would exceed a limit; nothing was changed.
    public struct Exceeded: Error, CustomStringConvertible {
        public var field: String
        public var message: String
        public var description: String { message }
    }

    /// Runs a write, turning the schema's refusals (SQLSTATE HL001, HL002) into ``Exceeded``.
    static func enforced<Result>(_ write: () async throws -> Result) async throws -> Result {
        do {
            return try await write()
        } catch let error as PSQLError {
            throw refusal(error) ?? error
        }
    }

    /// What a limit the schema refused a write for (SQLSTATE HL001, HL002, the attributes'
    /// bounds) means to a caller, or nil for any other error.
    static func refusal(_ error: PSQLError) -> Exceeded? {
        switch error.serverInfo?[.sqlState] {
        case "HL001":
            Exceeded(field: "tags", message: "a device carries at most \(maximumTagsPerDevice) tags; remove some first")
        case "HL002":
            Exceeded(
                field: "alias",
                message: "an alias names at most \(maximumDevicesPerAlias) devices; this one has that many already")
        case "23514" where error.serverInfo?[.constraintName] == "devices_attributes_bounds":
            Exceeded(
                field: "attributes",
                message:
                    "a device has at most \(DeviceAttributes.maximumCount) custom attributes, \(DeviceAttributes.maximumBytes) bytes as JSON; remove some (set them to null) first"
            )
        default:
            nil
        }
    }
}

/// The store found something it cannot explain (a bug or a schema mismatch).
public struct StoreError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
