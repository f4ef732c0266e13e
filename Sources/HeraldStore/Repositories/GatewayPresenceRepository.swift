import Foundation
import HeraldTiming
import Logging
import PostgresNIO

/// herald-gateway's presence (`gateways`, `gateway_presence`): each gateway's lease, and which
/// device is connected to which gateway. A presence row counts only while its gateway's lease is
/// valid, so routes to a gateway that died expire with its lease.
public struct GatewayPresenceRepository: Sendable {
    /// A presence change a gateway writes: the device connected (of `appID`, at `at`), or left.
    public struct Change: Sendable, Equatable {
        public var deviceID: Int64
        /// The device's app when it connected; nil when it left.
        public var appID: UUID?
        /// When the gateway welcomed the connection: of two gateways' rows for one device, the
        /// later connection's wins, whichever batch is written last.
        public var at: Date

        public init(deviceID: Int64, appID: UUID?, at: Date = Date()) {
            self.deviceID = deviceID
            self.appID = appID
            self.at = at
        }
    }

    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Where a connected device's pushes go: its gateway, and that gateway's delivery port.
    public struct Route: Sendable, Equatable, Hashable {
        public var gatewayID: UUID
        public var deliveryAddress: String

        public init(gatewayID: UUID, deliveryAddress: String) {
            self.gatewayID = gatewayID
            self.deliveryAddress = deliveryAddress
        }
    }

    /// Takes or renews the lease of gateway `id` until `lease` from now (making its row when it
    /// has none), and removes the gateways whose lease ended over a minute ago, with their rows.
    /// - Parameter deliveryAddress: where senders reach its delivery port (`host:port`).
    /// - Returns: whether its row was made now (the first renewal, or one after another gateway
    ///   removed it, rows and all, during a long outage): then its presence must be written again.
    @discardableResult
    public func renew(id: UUID, name: String, deliveryAddress: String, lease: Duration) async throws -> Bool {
        let rows = try await client.boundedQuery(
            """
            WITH renewed AS (
                INSERT INTO gateways (id, name, delivery_address, lease_expires_at)
                VALUES (\(id), \(name), \(deliveryAddress), now() + \(lease.wholeMilliseconds) * interval '1 millisecond')
                ON CONFLICT (id) DO UPDATE
                    SET lease_expires_at = excluded.lease_expires_at, delivery_address = excluded.delivery_address
                RETURNING (xmax = 0) AS made
            ), expired AS (
                DELETE FROM gateways WHERE lease_expires_at < now() - interval '1 minute' AND id <> \(id)
            )
            SELECT made FROM renewed
            """, logger: logger, within: .seconds(10))
        var made = false
        for try await value in rows.decode(Bool.self) { made = value }
        return made
    }

    /// Writes a batch of presence changes of gateway `id`: a connected device's row points here
    /// (taking it from another gateway whose connection is older); a device that left loses its
    /// row only if it still points here (it may have connected elsewhere since). Devices deleted
    /// meanwhile are skipped. Rows are written in device order, so two gateways' batches never
    /// wait on each other's locks in a cycle.
    public func record(_ changes: [Change], gatewayID id: UUID) async throws {
        let connected = changes.filter { $0.appID != nil }.sorted { $0.deviceID < $1.deviceID }
        let left = changes.filter { $0.appID == nil }.map(\.deviceID)
        if !left.isEmpty {
            _ = try await client.boundedQuery(
                "DELETE FROM gateway_presence WHERE gateway_id = \(id) AND device_id = ANY(\(left))",
                logger: logger, within: .seconds(10))
        }
        guard !connected.isEmpty else { return }
        let devices = connected.map(\.deviceID)
        let apps = connected.map { $0.appID! }
        let times = connected.map(\.at)
        _ = try await client.boundedQuery(
            """
            INSERT INTO gateway_presence (device_id, app_id, gateway_id, connected_at)
            SELECT c.device_id, c.app_id, \(id), c.connected_at
            FROM unnest(\(devices)::bigint[], \(apps)::uuid[], \(times)::timestamptz[])
                 AS c(device_id, app_id, connected_at)
            JOIN devices d ON d.id = c.device_id
            ORDER BY c.device_id
            ON CONFLICT (device_id) DO UPDATE
                SET gateway_id = excluded.gateway_id, app_id = excluded.app_id, connected_at = excluded.connected_at
                WHERE gateway_presence.connected_at <= excluded.connected_at
            """, logger: logger, within: .seconds(10))
    }

    /// Gives up gateway `id`'s lease and every presence row of it (a gateway's clean stop).
    public func leave(id: UUID) async throws {
        _ = try await client.boundedQuery(
            "DELETE FROM gateways WHERE id = \(id)", logger: logger, within: .seconds(5))
    }

    /// Whether any device of `appID` is connected to a gateway whose lease is valid: one index
    /// probe, asked once per push, so a broadcast with nobody online costs nothing more.
    public func anyoneConnected(appID: UUID) async throws -> Bool {
        let rows = try await client.boundedQuery(
            """
            SELECT EXISTS (
                SELECT 1 FROM gateway_presence p JOIN gateways g ON g.id = p.gateway_id
                WHERE p.app_id = \(appID) AND g.lease_expires_at > now())
            """, logger: logger)
        var found = false
        for try await value in rows.decode(Bool.self) { found = value }
        return found
    }

    /// Of `deviceIDs`, those connected to a gateway whose lease is valid, with that gateway.
    public func connected(among deviceIDs: [Int64]) async throws -> [Int64: Route] {
        guard !deviceIDs.isEmpty else { return [:] }
        let rows = try await client.boundedQuery(
            """
            SELECT p.device_id, p.gateway_id, g.delivery_address
            FROM gateway_presence p JOIN gateways g ON g.id = p.gateway_id
            WHERE p.device_id = ANY(\(deviceIDs)) AND g.lease_expires_at > now()
            """, logger: logger)
        var connected: [Int64: Route] = [:]
        for try await (device, gateway, address) in rows.decode((Int64, UUID, String).self) {
            connected[device] = Route(gatewayID: gateway, deliveryAddress: address)
        }
        return connected
    }
}
