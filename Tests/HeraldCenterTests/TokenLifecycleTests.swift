import Foundation
import HeraldAPNsVocabulary
import HeraldDomain
import HeraldStore
import Testing

@testable import HeraldCenter

@Suite("Outcome accounting and the token lifecycle", .serialized)
struct TokenLifecycleTests {
    @Test func unregisteredInvalidatesOnlyTokensNotRegisteredAgainAfterApnsTimestamp() async throws {
        try await withCenterEnvironment { env in
            let ids = try await env.register(2)
            // APNs saw the tokens stop now, by PostgreSQL's clock (which stamps registrations):
            // after the first registrations, before the second device's next one.
            var readNow = Date.distantPast
            for try await now in try await env.database.query("SELECT clock_timestamp()", logger: env.logger)
                .decode(Date.self)
            {
                readNow = now
            }
            let stoppedAt = readNow
            // The second device registers again after APNs saw its token stop: it keeps it.
            let again = try await env.devices.register(
                DeviceRegistration(
                    appID: env.app.id, token: CenterEnvironment.token(seed: 1, number: 1), environment: .production,
                    topic: env.app.bundleID))
            #expect(again.id == ids[1])
            let reader = try env.startFakeSender { device in
                BatchOutcome.Failure(
                    deviceID: device, status: .rejected, reason: "Unregistered", httpStatus: 410,
                    unregisteredAt: stoppedAt, attempts: 1)
            }
            let center = try env.startCenter(env.settings(name: "center-410"))
            let push = try await env.createPush(audience: .everyone)
            #expect(try await env.eventually { try await env.state(of: push) == .completed })
            #expect(try await env.devices.device(id: ids[0], appID: env.app.id)?.status == .invalid)
            #expect(try await env.devices.device(id: ids[0], appID: env.app.id)?.invalidReason == "Unregistered")
            #expect(try await env.devices.device(id: ids[1], appID: env.app.id)?.status == .active)
            let counters = try #require(try await env.pushes.counters(pushID: push.id))
            #expect(counters.tokensInvalidated == 1 && counters.rejected == 2 && counters.isComplete)

            // A redelivered outcome is not counted again.
            let duplicate = try await env.ledger.applyOutcomes([
                BatchOutcome(pushID: push.id, sequence: 0, acceptedDeviceIDs: ids, failures: [])
            ])
            #expect(duplicate.batchesCounted == 0 && duplicate.batchesIgnored == 1)
            #expect(try await env.pushes.counters(pushID: push.id) == counters)

            // Registering again reactivates the invalidated token, and the next push reaches it.
            _ = try await env.devices.register(
                DeviceRegistration(
                    appID: env.app.id, token: CenterEnvironment.token(seed: 1, number: 0), environment: .production,
                    topic: env.app.bundleID))
            #expect(try await env.devices.device(id: ids[0], appID: env.app.id)?.status == .active)
            await center.stop()
            await reader.stop()
        }
    }

    @Test func badTokensAreInvalidatedAtOnceAndOldInvalidOnesPurged() async throws {
        try await withCenterEnvironment { env in
            let ids = try await env.register(4)
            let reasons = [
                ids[0]: "BadDeviceToken", ids[1]: "DeviceTokenNotForTopic", ids[2]: "PayloadTooLarge",
                ids[3]: "ExpiredToken",
            ]
            let reader = try env.startFakeSender { device in
                BatchOutcome.Failure(
                    deviceID: device, status: .rejected, reason: reasons[device]!,
                    httpStatus: APNsReason(reasons[device]!).status, unregisteredAt: nil, attempts: 1)
            }
            let center = try env.startCenter(env.settings(name: "center-bad"))
            let push = try await env.createPush(audience: .everyone)
            #expect(try await env.eventually { try await env.state(of: push) == .completed })
            #expect(try await env.devices.device(id: ids[0], appID: env.app.id)?.status == .invalid)
            #expect(try await env.devices.device(id: ids[1], appID: env.app.id)?.status == .invalid)
            #expect(
                try await env.devices.device(id: ids[2], appID: env.app.id)?.status == .active,
                "a payload problem says nothing about the token")
            // ExpiredToken (410 without a timestamp) is as dead as BadDeviceToken: sending to it again is waste.
            #expect(try await env.devices.device(id: ids[3], appID: env.app.id)?.status == .invalid)
            #expect(try await env.devices.device(id: ids[3], appID: env.app.id)?.invalidReason == "ExpiredToken")
            #expect(try await env.pushes.counters(pushID: push.id)?.tokensInvalidated == 3)
            #expect(
                try await env.pushes.counters(pushID: push.id)?.rejectedByReason
                    == ["BadDeviceToken": 1, "DeviceTokenNotForTopic": 1, "PayloadTooLarge": 1, "ExpiredToken": 1])
            await center.stop()
            await reader.stop()
            // Invalid long enough: purged.
            try await env.database.query(
                "UPDATE devices SET invalidated_at = now() - interval '40 days' WHERE id = \(ids[0])",
                logger: env.logger)
            #expect(try await env.devices.purgeInvalid(before: Date().addingTimeInterval(-30 * 86_400)) >= 1)
            #expect(try await env.devices.device(id: ids[0], appID: env.app.id) == nil)
            #expect(try await env.devices.device(id: ids[1], appID: env.app.id) != nil)
        }
    }
}
