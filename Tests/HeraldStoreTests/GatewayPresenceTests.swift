import Foundation
import HeraldDomain
import HeraldStore
import Testing

@Suite("gateway presence: routes count only while their gateway's lease does")
struct GatewayPresenceTests {
    @Test(
        "connects and leaves are written in batches; a device leaving one gateway keeps its row on another; an expired lease hides its rows; leave removes them"
    )
    func presence() async throws {
        try await withMigratedStore { client, logger in
            let app = try await AppRepository(client: client, logger: logger).create(
                name: "Online", bundleID: "com.example.online")
            let other = try await AppRepository(client: client, logger: logger).create(
                name: "Nobody online", bundleID: "com.example.offline")
            let devices = DeviceRepository(client: client, logger: logger)
            var ids: [Int64] = []
            for _ in 0..<3 {
                ids.append(
                    try await devices.register(
                        DeviceRegistration(
                            appID: app.id, token: randomToken(), environment: .sandbox, topic: app.bundleID)
                    ).id)
            }
            let presence = GatewayPresenceRepository(client: client, logger: logger)
            let first = UUID()
            let second = UUID()
            #expect(
                try await presence.renew(
                    id: first, name: "gateway-1", deliveryAddress: "10.0.0.1:7444", lease: .seconds(15)))
            #expect(
                try await presence.renew(
                    id: first, name: "gateway-1", deliveryAddress: "10.0.0.1:7444", lease: .seconds(15)) == false,
                "a renewal of a row that is there does not make it anew")
            try await presence.renew(
                id: second, name: "gateway-2", deliveryAddress: "10.0.0.2:7444", lease: .seconds(15))
            #expect(try await presence.anyoneConnected(appID: app.id) == false)

            try await presence.record(
                ids.prefix(2).map { .init(deviceID: $0, appID: app.id) }, gatewayID: first)
            try await presence.record([.init(deviceID: ids[2], appID: app.id)], gatewayID: second)
            #expect(try await presence.anyoneConnected(appID: app.id))
            #expect(try await presence.anyoneConnected(appID: other.id) == false)
            let one = GatewayPresenceRepository.Route(gatewayID: first, deliveryAddress: "10.0.0.1:7444")
            let two = GatewayPresenceRepository.Route(gatewayID: second, deliveryAddress: "10.0.0.2:7444")
            #expect(try await presence.connected(among: ids) == [ids[0]: one, ids[1]: one, ids[2]: two])

            // Device 1 reconnected to the second gateway; its late leave from the first changes nothing.
            try await presence.record([.init(deviceID: ids[1], appID: app.id)], gatewayID: second)
            try await presence.record(
                [.init(deviceID: ids[1], appID: nil), .init(deviceID: ids[0], appID: nil)], gatewayID: first)
            #expect(try await presence.connected(among: ids) == [ids[1]: two, ids[2]: two])

            // A connect written late (retried after a failed batch) from an older connection does not
            // take the device back from the newer one.
            try await presence.record(
                [.init(deviceID: ids[1], appID: app.id, at: Date().addingTimeInterval(-60))], gatewayID: first)
            #expect(try await presence.connected(among: [ids[1]]) == [ids[1]: two])

            // A device deleted meanwhile is skipped, not an error for the batch.
            try await presence.record(
                [.init(deviceID: 9_000_000_000, appID: app.id), .init(deviceID: ids[0], appID: app.id)],
                gatewayID: first)
            #expect(try await presence.connected(among: ids) == [ids[0]: one, ids[1]: two, ids[2]: two])

            // The second gateway's lease ends (it died): its rows no longer count.
            try await presence.renew(id: second, name: "gateway-2", deliveryAddress: "10.0.0.2:7444", lease: .zero)
            #expect(try await presence.connected(among: ids) == [ids[0]: one])
            // The first leaves cleanly: nobody is connected.
            try await presence.leave(id: first)
            #expect(try await presence.anyoneConnected(appID: app.id) == false)
            // A gateway expired for over a minute is removed, rows and all, by the next renewal.
            try await client.query(
                "UPDATE gateways SET lease_expires_at = now() - interval '2 minutes' WHERE id = \(second)")
            #expect(
                try await presence.renew(
                    id: first, name: "gateway-1", deliveryAddress: "10.0.0.1:7444", lease: .seconds(15)),
                "the row it gave up is made anew: its gateway writes its connections again")
            var rows = 0
            // This test's devices only: other suites running at once keep gateways of their own.
            for try await _ in try await client.query(
                "SELECT device_id FROM gateway_presence WHERE device_id = ANY(\(ids))"
            ).decode(Int64.self) {
                rows += 1
            }
            #expect(rows == 0)
        }
    }
}
