import Foundation
import HeraldCore
import HeraldDomain
import HeraldRecords
import HeraldStore
import StoreTestSupport
import Testing

@testable import HeraldCenter

/// A/B tests at fan-out (docs/engagement.md#ab-tests): each device gets the payload of the variant
/// its (push, device) hash picks, the holdout is counted and never sent, the variants' counters and
/// the holdout add up to the push's, and a fan-out taken over midway cuts every device into the
/// same variant.
@Suite("A/B tests at fan-out", .serialized)
struct ABTestFanoutTests {
    static let split = PushSplit(
        variants: [.init(name: "short", weight: 5), .init(name: "long", weight: 3), .init(name: "emoji", weight: 2)],
        holdout: 0.1)
    static let payloads = ["short", "a longer text", "🎉"].map { Array(#"{"aps":{"alert":"\#($0)"}}"#.utf8) }

    /// Stores an A/B test push of `split` to everyone.
    static func createABTest(_ env: CenterEnvironment, throttlePerSecond: Int? = nil, split: PushSplit = split)
        async throws -> Push
    {
        let id = UUID()
        var definition = NewPush(
            id: id, appID: env.app.id, audienceJSON: PushAudience.everyone.json, notificationJSON: "{}",
            payload: payloads[0], throttlePerSecond: throttlePerSecond)
        definition.split = split
        definition.variantPayloads = payloads
        let (push, _) = try await env.pushes.create(
            definition,
            announcement: try .pushEvent(.created, pushID: id, appID: env.app.id, topic: env.pushesTopic))
        return push
    }

    /// The variant whose payload `batch` carries (the payload is stamped with the push id).
    static func variant(of batch: Herald_V1_JobBatch) -> Int? {
        let text = String(decoding: batch.payload, as: UTF8.self)
        return ["\"short\"", "\"a longer text\"", "\"🎉\""].firstIndex { text.contains($0) }
    }

    @Test("each device gets its variant's payload, the holdout is never sent, and every counter adds up")
    func variantsAndHoldout() async throws {
        try await withCenterEnvironment { env in
            let ids = try await env.registerMany(4000)
            // Every 13th device's token is dead: rejections count toward its variant too.
            let reader = try env.startFakeSender { device in
                device % 13 == 0
                    ? BatchOutcome.Failure(
                        deviceID: device, status: .rejected, reason: "BadDeviceToken", httpStatus: 400,
                        unregisteredAt: nil, attempts: 1) : nil
            }
            let center = try env.startCenter(env.settings(name: "center-ab", pageSize: 700, batchSize: 150))
            let push = try await Self.createABTest(env)
            #expect(try await env.eventually { try await env.state(of: push) == .completed })

            // Each device in exactly one batch, of its own variant; the held out in none.
            var sent: [Int64: Int] = [:]
            var seen = Set<Data>()
            for batch in reader.read(push: push) where seen.insert(batch.batchID).inserted {
                let variant = try #require(Self.variant(of: batch))
                for target in batch.targets {
                    #expect(sent.updateValue(variant, forKey: Int64(target.deviceID)) == nil)
                }
            }
            var perVariant = [Int](repeating: 0, count: 3)
            var heldOut = 0
            for device in ids {
                let expected = Self.split.variant(pushID: push.id, deviceID: device)
                #expect(sent[device] == expected)
                if let expected { perVariant[expected] += 1 } else { heldOut += 1 }
            }
            // The split follows the weights (a 4,000-device sample: within 3 points).
            #expect(abs(Double(heldOut) / 4000 - 0.1) < 0.03)
            for (index, weight) in [0.5, 0.3, 0.2].enumerated() {
                #expect(abs(Double(perVariant[index]) / Double(4000 - heldOut) - weight) < 0.03)
            }

            let counters = try #require(try await env.pushes.counters(pushID: push.id))
            #expect(counters.targeted == 4000 && counters.isComplete)
            #expect(counters.skippedByReason == ["holdout": Int64(heldOut)])
            let variants = try await env.pushes.variantCounters(pushID: push.id)
            #expect(variants.map(\.variant) == [0, 1, 2])
            for row in variants {
                let devices = ids.filter { sent[$0] == row.variant }
                let rejected = Int64(devices.filter { $0 % 13 == 0 }.count)
                #expect(row.targeted == Int64(devices.count))
                #expect(row.rejected == rejected && row.accepted == Int64(devices.count) - rejected)
                #expect(row.skipped == 0 && row.canceled == 0)
            }
            #expect(variants.reduce(0) { $0 + $1.targeted } + Int64(heldOut) == counters.targeted)
            #expect(variants.reduce(0) { $0 + $1.accepted } == counters.accepted)
            #expect(variants.reduce(0) { $0 + $1.rejected } == counters.rejected)

            // A batch rebuilt from its range holds its own variant's devices again (those still
            // active: the rejected tokens were invalidated).
            let recorded = try await env.database.query(
                """
                SELECT sequence, first_device, last_device, target_count, variant FROM push_batches
                WHERE push_id = \(push.id) AND variant = 1 ORDER BY sequence LIMIT 1
                """, logger: env.logger)
            var batch: RecordedBatch?
            for try await (sequence, first, last, count, variant) in recorded.decode(
                (Int32, Int64, Int64, Int32, Int16).self)
            {
                batch = RecordedBatch(
                    pushID: push.id, sequence: Int(sequence), firstDevice: first, lastDevice: last,
                    targetCount: Int(count), environment: .production, topic: env.app.bundleID)
                batch?.variant = Int(variant)
            }
            let context = try FanoutContext(
                push: try #require(try await env.pushes.push(id: push.id, appID: env.app.id)), batchSize: 150,
                topics: JobTopics(campaign: "unused", transactional: "unused"))
            let rebuilt = try await context.rebuild(try #require(batch), from: env.audience, progress: env.progress)
            let original = try #require(batch)
            #expect(
                Set(rebuilt.targets.deviceIDs)
                    == Set((original.firstDevice...original.lastDevice).filter { sent[$0] == 1 && $0 % 13 != 0 }))
            await center.stop()
            await reader.stop()
        }
    }

    @Test("a fan-out taken over midway by another center assigns every device the same variant")
    func takeoverKeepsTheSplit() async throws {
        try await withCenterEnvironment { env in
            let ids = try await env.registerMany(1500)
            let reader = try env.startFakeSender()
            // Throttled, so the first center stops midway.
            let first = try env.startCenter(
                env.settings(name: "center-ab-1", pageSize: 100, batchSize: 50, lease: 1000))
            let push = try await Self.createABTest(env, throttlePerSecond: 1500)
            #expect(
                try await env.eventually {
                    let batches = reader.read(push: push).count
                    return batches >= 4
                })
            await first.stop()
            let second = try env.startCenter(
                env.settings(name: "center-ab-2", pageSize: 100, batchSize: 50, lease: 1000))
            #expect(try await env.eventually(timeout: .seconds(120)) { try await env.state(of: push) == .completed })

            var sent: [Int64: Set<Int>] = [:]
            for batch in reader.read(push: push) {
                let variant = try #require(Self.variant(of: batch))
                for target in batch.targets { sent[Int64(target.deviceID), default: []].insert(variant) }
            }
            for device in ids {
                let expected = Self.split.variant(pushID: push.id, deviceID: device)
                #expect(sent[device] == expected.map { [$0] })
            }
            let counters = try #require(try await env.pushes.counters(pushID: push.id))
            let variants = try await env.pushes.variantCounters(pushID: push.id)
            #expect(counters.targeted == 1500 && counters.isComplete)
            #expect(
                variants.reduce(0) { $0 + $1.targeted } + (counters.skippedByReason["holdout"] ?? 0) == 1500)
            #expect(variants.reduce(0) { $0 + $1.accepted } == counters.accepted)
            await second.stop()
            await reader.stop()
        }
    }

    @Test("winner mode: the sample gets the variants, the rest gets the variant with the best open rate")
    func winnerMode() async throws {
        try await withCenterEnvironment { env in
            let ids = try await env.registerMany(2000)
            let reader = try env.startFakeSender()
            let center = try env.startCenter(env.settings(name: "center-ab-winner", pageSize: 400, batchSize: 100))
            var split = Self.split
            split.sample = 0.3
            split.waitSeconds = 3600
            let push = try await Self.createABTest(env, split: split)
            // The sample is sent; the push waits for its pick.
            #expect(
                try await env.eventually {
                    try await env.pushes.push(id: push.id, appID: env.app.id).map {
                        $0.state == .scheduled && $0.wave == 1
                    }
                        ?? false
                })
            let sample = Set(ids.filter { split.phase(pushID: push.id, deviceID: $0) == 0 })
            let sampleSent = sample.filter { split.variant(pushID: push.id, deviceID: $0) != nil }
            // Its outcomes are counted (the pick reads the variants' devices reached).
            #expect(
                try await env.eventually {
                    try await env.pushes.variantCounters(pushID: push.id).reduce(0) { $0 + $1.accepted }
                        == Int64(sampleSent.count)
                })
            #expect(Set(reader.deviceCounts(push: push).keys) == sampleSent)
            #expect(abs(Double(sample.count) / 2000 - 0.3) < 0.05)
            // Phones open the third variant most (as POST /v1/events would count them), and the
            // wait is over.
            try await env.database.query(
                """
                INSERT INTO push_engagement_counts (push_id, variant, shard, opened) VALUES
                    (\(push.id), 0, 0, 10), (\(push.id), 1, 0, 12), (\(push.id), 2, 3, 30)
                """, logger: env.logger)
            try await env.database.query(
                "UPDATE pushes SET scheduled_at = now() WHERE id = \(push.id)", logger: env.logger)
            #expect(try await env.eventually { try await env.state(of: push) == .completed })

            let stored = try #require(try await env.pushes.push(id: push.id, appID: env.app.id)?.definition.split)
            #expect(stored.winner == 2 && stored.secondPhaseFrom != nil)
            var sent: [Int64: Int] = [:]
            var seen = Set<Data>()
            for batch in reader.read(push: push) where seen.insert(batch.batchID).inserted {
                let variant = try #require(Self.variant(of: batch))
                for target in batch.targets {
                    #expect(sent.updateValue(variant, forKey: Int64(target.deviceID)) == nil)
                }
            }
            var heldOut: Int64 = 0
            for device in ids {
                // The sample's devices their own variant, the rest the winner; the held out nothing.
                let expected = stored.variant(pushID: push.id, deviceID: device)
                #expect(sent[device] == expected)
                if expected == nil { heldOut += 1 }
                if !sample.contains(device), expected != nil { #expect(expected == 2) }
            }
            let counters = try #require(try await env.pushes.counters(pushID: push.id))
            #expect(counters.targeted == 2000 && counters.isComplete)
            #expect(counters.skippedByReason == ["holdout": heldOut])
            let variants = try await env.pushes.variantCounters(pushID: push.id)
            #expect(variants.reduce(0) { $0 + $1.targeted } + heldOut == 2000)
            #expect(variants.reduce(0) { $0 + $1.accepted } == counters.accepted)
            #expect(variants.first { $0.variant == 2 }?.targeted == Int64(sent.values.filter { $0 == 2 }.count))
            await center.stop()
            await reader.stop()
        }
    }

    @Test("winner mode canceled while it waits for the pick: the rest counts as canceled, every device once")
    func winnerModeCanceledWhileWaiting() async throws {
        try await withCenterEnvironment { env in
            _ = try await env.registerMany(1200)
            let reader = try env.startFakeSender()
            let center = try env.startCenter(env.settings(name: "center-ab-cancel", pageSize: 300, batchSize: 100))
            var split = Self.split
            split.sample = 0.25
            split.waitSeconds = 3600
            let push = try await Self.createABTest(env, split: split)
            #expect(
                try await env.eventually {
                    try await env.pushes.push(id: push.id, appID: env.app.id).map {
                        $0.state == .scheduled && $0.wave == 1
                    }
                        ?? false
                })
            #expect(try await env.cancel(push))
            #expect(
                try await env.eventually {
                    try await env.pushes.counters(pushID: push.id).map { $0.targeted == 1200 && $0.isComplete } ?? false
                })
            let counters = try #require(try await env.pushes.counters(pushID: push.id))
            let sample = (try await env.pushes.variantCounters(pushID: push.id)).reduce(0) { $0 + $1.targeted }
            let heldOut = counters.skippedByReason["holdout"] ?? 0
            // The sample's devices were counted once (sent, or held out); everyone else canceled.
            #expect(counters.canceled == 1200 - sample - heldOut, "\(counters)")
            await center.stop()
            await reader.stop()
        }
    }

    @Test("winner mode: a pick made while the sample goes out starts the rest as soon as the sample is sent")
    func winnerPickedDuringTheSample() async throws {
        try await withCenterEnvironment { env in
            _ = try await env.registerMany(1200)
            let reader = try env.startFakeSender()
            let center = try env.startCenter(env.settings(name: "center-ab-pick", pageSize: 100, batchSize: 50))
            var split = Self.split
            split.sample = 0.5
            split.waitSeconds = 3600
            // Throttled: the sample (about 600 devices) takes seconds.
            let push = try await Self.createABTest(env, throttlePerSecond: 300, split: split)
            #expect(try await env.eventually { try await env.state(of: push) == .fanningOut })
            #expect(try await env.claims.pickWinner(1, pushID: push.id, appID: env.app.id))
            #expect(try await !env.claims.pickWinner(2, pushID: push.id, appID: env.app.id))
            // Without waiting the hour.
            #expect(try await env.eventually(timeout: .seconds(120)) { try await env.state(of: push) == .completed })
            let stored = try #require(try await env.pushes.push(id: push.id, appID: env.app.id)?.definition.split)
            #expect(stored.winner == 1 && stored.secondPhaseFrom != nil)
            let counters = try #require(try await env.pushes.counters(pushID: push.id))
            #expect(counters.targeted == 1200 && counters.isComplete)
            await center.stop()
            await reader.stop()
        }
    }
}
