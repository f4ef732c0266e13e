import AsyncHTTPClient
import Foundation
import HeraldGatewayProtocol
import HeraldMetrics
import HeraldRecords
import HeraldStore
import HeraldTiming
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle
import Synchronization

/// The long-connection road (docs/gateway.md, "How Herald routes over it"): which targets of a
/// job batch hold a live connection to a herald-gateway, and their pushes handed to those
/// gateways' delivery ports. The sender sends every other target through APNs at once, and the
/// connected ones that did not acknowledge in time after, with the same apns-id.
///
/// Nobody online costs one look-up per app a second (``anyoneConnected(appID:)``, cached): a
/// broadcast to an app with no connected device pays nothing more. A gateway that does not
/// answer, or answers with an error, reached none of its targets: they go through APNs.
///
/// - Important: run it (it is a `Service`) so its HTTP client is shut down at the end.
public final class OnlineRouter: Service, Sendable {
    private let presence: GatewayPresenceRepository
    private let token: String
    private let timeout: Duration
    private let cacheFor: Duration
    private let http: HTTPClient
    private let logger: Logger
    private let anyone = Mutex<[UUID: (connected: Bool, until: ContinuousClock.Instant)]>([:])
    let offered = Atomic<Int>(0)
    let acknowledged = Atomic<Int>(0)
    let gatewayFailures = Atomic<Int>(0)

    /// - Parameters:
    ///   - token: the delivery ports' bearer token (`DeliveryToken.derive(masterKey:)`).
    ///   - timeout: how long a gateway's answer is waited for (longer than its ack timeout).
    ///   - cacheFor: how long "anyone of this app connected?" is remembered.
    ///   - connectionsPerGateway: HTTP connections kept to each gateway: the job batches the
    ///     sender lets hand pushes to gateways at once (campaign and transactional), each of which
    ///     holds one request to a gateway until its pushes are acknowledged or time out, so no
    ///     batch waits for another's connection (a wait the timeout would count).
    public init(
        presence: GatewayPresenceRepository, token: String, timeout: Duration, cacheFor: Duration,
        connectionsPerGateway: Int, logger: Logger
    ) {
        self.presence = presence
        self.token = token
        self.timeout = timeout
        self.cacheFor = cacheFor
        self.logger = logger
        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(connect: .seconds(2), read: .milliseconds(Int64(timeout.wholeMilliseconds)))
        configuration.connectionPool = .init(
            idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: max(1, connectionsPerGateway))
        http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    public func run() async throws {
        try? await gracefulShutdown()
        try await http.shutdown()
    }

    /// Whether any device of `appID` is connected to a live gateway (asked at most once per
    /// `cacheFor`); false when PostgreSQL does not answer (APNs then).
    func anyoneConnected(appID: UUID) async -> Bool {
        let now = ContinuousClock.now
        if let known = anyone.withLock({ $0[appID] }), known.until > now { return known.connected }
        let connected: Bool
        do {
            connected = try await presence.anyoneConnected(appID: appID)
        } catch {
            logger.warning(
                "gateway presence not readable; the batch goes through APNs",
                metadata: ["error": "\(HeraldDatabase.describe(error))"])
            connected = false
        }
        anyone.withLock { $0[appID] = (connected, now + cacheFor) }
        return connected
    }

    /// The targets of `batch` connected to a live gateway now, with their gateway; none when
    /// nobody of its app is.
    func connected(_ batch: PackedJobBatch) async -> [Int64: GatewayPresenceRepository.Route] {
        guard await anyoneConnected(appID: UUID(data: batch.header.appID)) else { return [:] }
        do {
            return try await presence.connected(among: Array(batch.targets.deviceIDs))
        } catch {
            logger.warning(
                "gateway presence not readable; the batch goes through APNs",
                metadata: ["error": "\(HeraldDatabase.describe(error))"])
            return [:]
        }
    }

    /// Hands the pushes of the `connected` targets of `notifications` to their gateways, and
    /// returns those acknowledged in time. A recall's batch (`revoking` the id of the push it
    /// recalls) hands them a revoke naming that push and the collapse id instead, and returns
    /// those it was written to.
    func deliver(
        _ notifications: JobBatchNotifications, to connected: [Int64: GatewayPresenceRepository.Route],
        revoking: Data = Data()
    ) async -> Set<Int64> {
        var byAddress: [String: GatewayDeliveries] = [:]
        let shared = notifications.shared
        // Each distinct payload turned into the frame's bytes once (a plain push has one), shared
        // by every device's push.
        let payloads = notifications.payloads.map { Data($0.readableBytesView) }
        for index in 0..<notifications.count {
            let target = notifications.target(at: index)
            let deviceID = notifications.targets.deviceIDs[target]
            guard let route = connected[deviceID], notifications.problem(at: index) == nil else { continue }
            var delivery = GatewayDelivery()
            delivery.deviceID = deviceID
            if revoking.isEmpty {
                delivery.push.pushID = notifications.pushID.recordBytes
                delivery.push.collapseID = shared.collapseID ?? ""
                delivery.push.payload = payloads[Int(notifications.payloadIndexes[target])]
                delivery.push.pushType = shared.pushType.rawValue
                delivery.push.priority = UInt32(shared.priority.rawValue)
                delivery.push.expiresAt = shared.expiration ?? 0
            } else {
                delivery.revoke.pushID = revoking
                delivery.revoke.collapseID = shared.collapseID ?? ""
            }
            byAddress[route.deliveryAddress, default: GatewayDeliveries()].deliveries.append(delivery)
        }
        guard !byAddress.isEmpty else { return [] }
        offered.add(byAddress.values.reduce(0) { $0 + $1.deliveries.count }, ordering: .relaxed)
        let reached = await withTaskGroup(of: [Int64].self) { group in
            for (address, deliveries) in byAddress {
                group.addTask { await self.post(deliveries, to: address) }
            }
            var reached = Set<Int64>()
            for await devices in group { reached.formUnion(devices) }
            return reached
        }
        acknowledged.add(reached.count, ordering: .relaxed)
        return reached
    }

    private func post(_ deliveries: GatewayDeliveries, to address: String) async -> [Int64] {
        do {
            var request = HTTPClientRequest(url: "http://\(address)/v1/deliveries")
            request.method = .POST
            request.headers.add(name: "Authorization", value: "Bearer \(token)")
            request.headers.add(name: "Content-Type", value: "application/x-protobuf")
            request.body = .bytes(ByteBuffer(bytes: try deliveries.serializedBytes() as [UInt8]))
            let response = try await http.execute(request, timeout: .milliseconds(Int64(timeout.wholeMilliseconds)))
            let body = try await response.body.collect(upTo: 1 << 20)
            guard response.status == .ok else {
                throw GatewayRefused(status: response.status.code, body: String(buffer: body))
            }
            let results = try GatewayDeliveryResults(serializedBytes: Array(body.readableBytesView))
            return results.acknowledgedDeviceIds
        } catch {
            gatewayFailures.add(1, ordering: .relaxed)
            logger.warning(
                "a gateway did not take its deliveries; they go through APNs",
                metadata: ["gateway": "\(address)", "devices": "\(deliveries.deliveries.count)", "error": "\(error)"])
            return []
        }
    }

    /// `herald_sender_online_*`: pushes offered to gateways, acknowledged there, and gateway
    /// requests that failed (their pushes went through APNs).
    func prometheusText() -> String {
        var text = PrometheusText()
        text.single(
            "herald_sender_online_offered_total", .counter,
            help: "Pushes handed to a gateway for a connected device.", value: offered.load(ordering: .relaxed))
        text.single(
            "herald_sender_online_acknowledged_total", .counter,
            help: "Pushes acknowledged over the long connection (delivered_online).",
            value: acknowledged.load(ordering: .relaxed))
        text.single(
            "herald_sender_online_gateway_failures_total", .counter,
            help: "Delivery requests a gateway did not answer or refused (their pushes went through APNs).",
            value: gatewayFailures.load(ordering: .relaxed))
        return text.text
    }

    struct GatewayRefused: Error, CustomStringConvertible {
        var status: UInt
        var body: String
        var description: String { "HTTP \(status): \(body.prefix(300))" }
    }
}
