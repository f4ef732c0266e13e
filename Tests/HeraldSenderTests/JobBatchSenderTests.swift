import APNsSimulator
import APNsTestSupport
import Crypto
import Foundation
import HeraldAPNs
import HeraldAPNsVocabulary
import HeraldRecords
import HeraldTiming
import ServiceLifecycle
import Testing

@testable import HeraldHTTP2
@testable import HeraldSender

@Suite("Retry policy (pure)")
struct RetryPolicyTests {
    @Test("back-off doubles with equal jitter, capped; attempts and expiration end retrying")
    func policy() {
        let policy = RetryPolicy(
            maxAttempts: 4, backoff: Backoff(initial: .milliseconds(100), maximum: .milliseconds(1000)))
        #expect(
            policy.decision(afterAttempt: 1, nowMilliseconds: 0, expirationMilliseconds: nil, unit: 0)
                == .retry(after: .milliseconds(50)))
        #expect(
            policy.decision(afterAttempt: 3, nowMilliseconds: 0, expirationMilliseconds: nil, unit: 0)
                == .retry(after: .milliseconds(200)))
        #expect(
            policy.decision(afterAttempt: 3, nowMilliseconds: 0, expirationMilliseconds: nil, unit: 1)
                == .retry(after: .milliseconds(400)))
        #expect(policy.decision(afterAttempt: 4, nowMilliseconds: 0, expirationMilliseconds: nil, unit: 0) == .giveUp)
        #expect(
            policy.decision(afterAttempt: 1, nowMilliseconds: 1000, expirationMilliseconds: 1000, unit: 0) == .expired)
        #expect(
            policy.decision(afterAttempt: 2, nowMilliseconds: 950, expirationMilliseconds: 1000, unit: 0) == .expired)
    }
}

enum SenderFixture {
    static let bundleID = "com.herald.sender"
    static let key = P256.Signing.PrivateKey()
    static let pushID = UUID()
    static let unregisteredAt: Int64 = 1_700_000_123_000

    static func token(_ index: Int) -> Data {
        Data((0..<32).map { UInt8(truncatingIfNeeded: index >> (($0 % 4) * 8)) ^ UInt8($0) })
    }
    static func hex(_ data: Data) -> String { Hexadecimal.encode(data) }

    /// 300 targets: device ids 1…300; 290 deliverable, 5 unregistered (291…295), 5 unknown (296…300).
    static func batch(expirationS: Int64 = 0, collapseID: String = "") -> Herald_V1_JobBatch {
        Herald_V1_JobBatch(
            pushID: pushID.recordBytes, appID: Data(repeating: 7, count: 16), sequence: 0,
            environment: .sandbox, apnsTopic: bundleID, pushType: .alert, priority: 10, expirationS: expirationS,
            collapseID: collapseID, payload: Data(#"{"aps":{"alert":"batch"}}"#.utf8),
            targets: (1...300).map { Herald_V1_JobBatch.Target(deviceID: UInt64($0), token: token($0)) },
            createdAtMs: Int64(Date().timeIntervalSince1970 * 1000))
    }

    /// `batch` as herald-sender reads it: encoded as a job record, then decoded.
    static func record(_ batch: Herald_V1_JobBatch) throws -> PackedJobBatch {
        try PackedJobBatch.decodeRecord(batch.encodedRecord())
    }

    static func simulator(_ adjust: (inout APNsSimulatorConfiguration) -> Void = { _ in }) -> APNsSimulatorConfiguration
    {
        var configuration = APNsSimulatorConfiguration()
        configuration.port = 0
        configuration.adminPort = nil
        configuration.threads = 1
        configuration.keys = [
            ProviderKey(
                keyID: "SENDERKEY1", teamID: "SENDERTEAM", publicKeyPEM: key.publicKey.pemRepresentation,
                topics: [bundleID])
        ]
        configuration.devices =
            (1...290).map { SimulatedDevice(token: hex(token($0)), topic: bundleID) }
            + (291...295).map {
                SimulatedDevice(token: hex(token($0)), topic: bundleID, unregisteredAt: unregisteredAt)
            }
        adjust(&configuration)
        return configuration
    }
}

func withSenderClient(
    _ configuration: APNsSimulatorConfiguration, _ body: (APNsSimulator, APNsClient) async throws -> Void
) async throws {
    try await withAPNsClient(
        simulator: configuration,
        credential: .token(APNsSigningKey(privateKey: SenderFixture.key, keyID: "SENDERKEY1", teamID: "SENDERTEAM")),
        body)
}

@Suite("Sending a job batch through apns-sim", .serialized)
struct JobBatchSenderTests {
    @Test("every target ends in exactly one outcome; APNs' reasons and the 410 timestamp are kept")
    func outcomesAddUp() async throws {
        try await withSenderClient(SenderFixture.simulator()) { simulator, client in
            let collapseID = SenderFixture.pushID.uuidString.lowercased()
            let outcomes = try await JobBatchSender().send(
                SenderFixture.record(SenderFixture.batch(collapseID: collapseID)), with: client)
            #expect(outcomes.acceptedDeviceIds == (1...290).map(UInt64.init))
            #expect(outcomes.failures.count == 10)
            #expect(outcomes.acceptedDeviceIds.count + outcomes.failures.count == 300)
            let unregistered = outcomes.failures.filter { $0.reason == "Unregistered" }
            #expect(unregistered.map(\.deviceID) == (291...295).map(UInt64.init))
            #expect(
                unregistered.allSatisfy {
                    $0.httpStatus == 410 && $0.unregisteredAtMs == SenderFixture.unregisteredAt
                        && $0.status == .rejected
                })
            #expect(
                outcomes.failures.filter { $0.reason == "BadDeviceToken" }.map(\.deviceID)
                    == (296...300).map(UInt64.init))
            // What a phone got: exactly the accepted ones, each with its deterministic apns-id and
            // the collapse id the record carries (the push's, decided when it was accepted).
            let recorded = simulator.ledger.notifications()
            #expect(recorded.count == 290)
            let expectedID = APNsNotification.deterministicID(pushID: SenderFixture.pushID, deviceID: 1)
            #expect(
                recorded.contains { $0.apnsID == expectedID && $0.token == SenderFixture.hex(SenderFixture.token(1)) })
            #expect(Set(recorded.map(\.collapseID)) == [collapseID])
            #expect(outcomes.batchID == SenderFixture.batch().batchID)
        }
    }

    @Test("a templated batch: each target gets its own payload; one rendered over the limit is never sent")
    func perTargetPayloads() async throws {
        try await withSenderClient(SenderFixture.simulator()) { simulator, client in
            var batch = SenderFixture.batch()
            batch.targets = Array(batch.targets.prefix(3))
            batch.payload = Data()
            batch.payloads = [
                Data(#"{"aps":{"alert":"Hi Ann"}}"#.utf8), Data(), Data(#"{"aps":{"alert":"Hi Bo"}}"#.utf8),
            ]
            for (index, payload) in [0, 1, 2].enumerated() { batch.targets[index].payloadIndex = UInt32(payload) }
            let outcomes = try await JobBatchSender().send(SenderFixture.record(batch), with: client)
            #expect(outcomes.acceptedDeviceIds == [1, 3])
            #expect(
                outcomes.failures.map { [$0.deviceID, UInt64($0.attempts)] } == [[2, 0]]
                    && outcomes.failures.first?.reason == "RenderedPayloadTooLarge"
                    && outcomes.failures.first?.status == .rejected)
            let recorded = simulator.ledger.notifications()
            #expect(
                Set(recorded.map { "\($0.token.prefix(4)) \($0.payload)" }) == [
                    "\(SenderFixture.hex(SenderFixture.token(1)).prefix(4)) {\"aps\":{\"alert\":\"Hi Ann\"}}",
                    "\(SenderFixture.hex(SenderFixture.token(3)).prefix(4)) {\"aps\":{\"alert\":\"Hi Bo\"}}",
                ])
        }
    }

    @Test("a 503/429 storm is retried until every deliverable target is accepted, once each")
    func storm() async throws {
        var faults = APNsFaults()
        faults.serviceUnavailable = 0.3
        faults.tooManyRequests = 0.2
        try await withSenderClient(SenderFixture.simulator { $0.faults = faults }) { simulator, client in
            var sender = JobBatchSender(
                retryPolicy: RetryPolicy(
                    maxAttempts: 30, backoff: Backoff(initial: .milliseconds(2), maximum: .milliseconds(20))))
            let metrics = SenderMetrics()
            sender.metrics = metrics
            let outcomes = try await sender.send(
                SenderFixture.record(SenderFixture.batch(collapseID: "promo")), with: client)
            #expect(outcomes.acceptedDeviceIds.count == 290)
            #expect(outcomes.failures.count == 10)
            #expect(simulator.ledger.counts.accepted == 290)
            let unavailable = simulator.ledger.counts.byReason["ServiceUnavailable"] ?? 0
            #expect(unavailable > 0)
            // Every 503 and 429 apns-sim answered was counted as a retry by its status.
            func retries(_ cause: String) -> Int {
                let line = metrics.prometheusText().split(separator: "\n")
                    .first { $0.hasPrefix("herald_sender_retries_total{cause=\"\(cause)\"}") }
                return line.flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
            }
            #expect(retries("503") == unavailable)
            #expect(retries("429") == simulator.ledger.counts.byReason["TooManyRequests"] ?? 0)
            #expect(retries("429") > 0)
            #expect(Set(simulator.ledger.notifications().map(\.collapseID)) == ["promo"])
        }
    }

    @Test("retries stop at the expiration: the targets are expired, not lost")
    func expiration() async throws {
        var faults = APNsFaults()
        faults.serviceUnavailable = 1
        try await withSenderClient(SenderFixture.simulator { $0.faults = faults }) { simulator, client in
            let sender = JobBatchSender(
                retryPolicy: RetryPolicy(
                    maxAttempts: 1000, backoff: Backoff(initial: .milliseconds(50), maximum: .milliseconds(200))))
            // Whole seconds, so at least three ahead: room for a second attempt of every target
            // even on a loaded machine (with two, one CI run gave some targets a single attempt).
            let expiration = Int64(Date().timeIntervalSince1970) + 4
            let outcomes = try await sender.send(
                SenderFixture.record(SenderFixture.batch(expirationS: expiration)), with: client)
            #expect(outcomes.acceptedDeviceIds.isEmpty)
            #expect(outcomes.failures.count == 300)
            // The ten bad tokens are refused for good at once; the rest expire after retries.
            let expired = outcomes.failures.filter { $0.status == .expired }
            #expect(expired.map(\.deviceID) == (1...290).map(UInt64.init))
            #expect(expired.allSatisfy { $0.attempts >= 2 })
            #expect(simulator.ledger.counts.accepted == 0)
        }
    }

    @Test("a round sends its targets in the round's order, also when it holds every target out of order")
    func roundOrder() throws {
        var batch = SenderFixture.batch()
        batch.targets = Array(batch.targets.prefix(4))
        let notifications = JobBatchNotifications(try SenderFixture.record(batch))
        func tokens(_ round: [Int]) -> [String] {
            let subset = notifications.subset(round)
            return (0..<subset.count).map { subset.notification(at: $0).deviceToken }
        }
        let all = (1...4).map { SenderFixture.hex(SenderFixture.token($0)) }
        #expect(tokens([0, 1, 2, 3]) == all)
        // Every target again, those due later first: outcomes come back in this order.
        #expect(tokens([2, 3, 0, 1]) == [2, 3, 0, 1].map { all[$0] })
        #expect(tokens([3, 1]) == [3, 1].map { all[$0] })
    }

    /// A block's fields as "name: value" lines, never-indexed ones marked.
    static func fields(_ block: HTTP2HeaderBlock) -> [String] {
        block.withNameValuePairs { pairs, count in
            UnsafeBufferPointer(start: pairs, count: count).map { pair in
                String(decoding: UnsafeBufferPointer(start: pair.name, count: pair.namelen), as: UTF8.self) + ": "
                    + String(decoding: UnsafeBufferPointer(start: pair.value, count: pair.valuelen), as: UTF8.self)
                    + (pair.flags & 0x01 != 0 ? " (never indexed)" : "")
            }
        }
    }

    @Test("each target's request carries the push's fields, its own token and its deterministic apns-id")
    func requestPerTarget() throws {
        var batch = SenderFixture.batch(expirationS: 1_900_000_000, collapseID: "promo")
        batch.targets = Array(batch.targets.prefix(3))
        let notifications = JobBatchNotifications(try SenderFixture.record(batch))
        for index in 0..<3 {
            // The request written from the packed batch is the one its notification value writes.
            var packed = HTTP2HeaderBlock()
            var single = HTTP2HeaderBlock()
            let body = notifications.writeRequest(
                at: index, authority: "apns.test", authorization: "bearer x", into: &packed)
            let notification = notifications.notification(at: index)
            _ = [notification].writeRequest(at: 0, authority: "apns.test", authorization: "bearer x", into: &single)
            #expect(Self.fields(packed) == Self.fields(single))
            #expect(Self.fields(packed).count == 11)
            #expect(body == notification.payload)
            #expect(notification.deviceToken == SenderFixture.hex(SenderFixture.token(index + 1)))
            #expect(
                notification.apnsID
                    == APNsNotification.deterministicID(pushID: SenderFixture.pushID, deviceID: Int64(index + 1)))
            #expect(notification.collapseID == "promo" && notification.expiration == 1_900_000_000)
        }
    }

    @Test("out of attempts: rejected with the last reason and the number of attempts")
    func giveUp() async throws {
        var faults = APNsFaults()
        faults.tooManyRequests = 1
        try await withSenderClient(SenderFixture.simulator { $0.faults = faults }) { _, client in
            let sender = JobBatchSender(
                retryPolicy: RetryPolicy(
                    maxAttempts: 3, backoff: Backoff(initial: .milliseconds(1), maximum: .milliseconds(5))))
            let outcomes = try await sender.send(SenderFixture.record(SenderFixture.batch()), with: client)
            let throttled = outcomes.failures.filter { $0.reason == "TooManyRequests" }
            #expect(throttled.count == 290)
            #expect(throttled.allSatisfy { $0.attempts == 3 && $0.httpStatus == 429 && $0.status == .rejected })
        }
    }
}
