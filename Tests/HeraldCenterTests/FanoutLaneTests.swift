import Foundation
import HeraldCore
import HeraldDomain
import HeraldStore
import StoreTestSupport
import Testing

@testable import HeraldCenter

/// Fan-out slots in lanes (docs/operations.md#fan-out-lanes): a push to a list of devices never
/// waits for a campaign's slot, a paused campaign gives its slot back, and claims take each app's
/// turn before anyone's second push.
@Suite("Fan-out lanes and fairness", .serialized)
struct FanoutLaneTests {
    /// One bulk slot held by a slow, throttled broadcast (paced pushes share the bulk slots here).
    func settings(_ env: CenterEnvironment, name: String, express: Int) -> CenterSettings {
        var settings = env.settings(name: name, pageSize: 200, batchSize: 100)
        settings.maxConcurrentFanouts = 1
        settings.maxPacedFanouts = 0
        settings.maxExpressFanouts = express
        return settings
    }

    @Test("a list push does not wait for a campaign's slot; a transactional one travels its own topic")
    func aListAudienceDoesNotWaitForACampaignsSlot() async throws {
        try await withCenterEnvironment { env in
            try await env.registerMany(2000)
            let aliased = try await env.register(3, seed: 4) { number in ([], "vip-\(number)") }
            let reader = try env.startFakeSender()
            // Without an express lane the list push waits behind the campaign…
            let waiting = try env.startCenter(settings(env, name: "center-shared", express: 0))
            let campaign = try await env.createPush(audience: .everyone, throttlePerSecond: 20)
            #expect(try await env.eventually { try await env.state(of: campaign) == .fanningOut })
            let first = try await env.createPush(
                audience: PushAudience(aliases: ["vip-0", "vip-1"]), priorityClass: .transactional)
            // Sweeps find it and have no slot for it.
            await waiting.center.sweep()
            await waiting.center.sweep()
            #expect(try await env.state(of: first) == .accepted, "no slot: the campaign holds the only one")
            #expect(waiting.center.metrics.fanoutsStarted.load(ordering: .relaxed) == 1)
            await waiting.stop()
            // …with one, it is sent while the campaign still fans out.
            let express = try env.startCenter(settings(env, name: "center-lanes", express: 2))
            #expect(try await env.eventually { try await env.state(of: first) == .completed })
            let second = try await env.createPush(audience: PushAudience(registrationIDs: [aliased[2]]))
            #expect(try await env.eventually { try await env.state(of: second) == .completed })
            #expect(try await env.state(of: campaign) == .fanningOut, "the campaign is still being paced")
            #expect(reader.deviceCounts(push: first).count == 2 && reader.deviceCounts(push: second).count == 1)
            // The transactional push's batches travel the topic senders read first; a list push sent
            // as a campaign takes the express lane but travels herald.jobs with the campaigns.
            #expect(reader.topics(of: first) == [env.transactionalJobsTopic])
            #expect(reader.topics(of: second) == [env.jobsTopic])
            // The campaign, paced at 20 a second, may not have produced its first batch yet: its
            // state says nothing of what the reader has read.
            #expect(try await env.eventually { reader.topics(of: campaign) == [env.jobsTopic] })
            _ = try await env.pushes.cancel(id: campaign.id, appID: env.app.id, outbox: [])
            await express.stop()
            await reader.stop()
        }
    }

    @Test func aPausedCampaignGivesItsSlotBack() async throws {
        try await withCenterEnvironment { env in
            try await env.registerMany(2000)
            let reader = try env.startFakeSender()
            let center = try env.startCenter(settings(env, name: "center-pause", express: 0))
            let slow = try await env.createPush(audience: .everyone, throttlePerSecond: 500)
            #expect(try await env.eventually { try await env.state(of: slow) == .fanningOut })
            #expect(try await env.claims.setPaused(true, pushID: slow.id, appID: env.app.id))
            // Once its page is paced out, the paused push lets go of the only slot…
            let other = try await env.createPush(audience: .everyone)
            #expect(try await env.eventually { try await env.state(of: other) == .completed })
            #expect(try await env.state(of: slow) == .fanningOut)
            let emitted = try await env.pushes.push(id: slow.id, appID: env.app.id)?.batchesEmitted ?? 0
            // Sweeps while it is paused start nothing of it.
            await center.center.sweep()
            await center.center.sweep()
            #expect(center.center.metrics.fanoutsStarted.load(ordering: .relaxed) == 2)
            #expect(
                try await env.pushes.push(id: slow.id, appID: env.app.id)?.batchesEmitted == emitted,
                "nothing of it moves while paused")
            // …and it goes on from its cursor when resumed: every device exactly once.
            #expect(try await env.claims.setPaused(false, pushID: slow.id, appID: env.app.id))
            #expect(try await env.eventually { try await env.state(of: slow) == .completed })
            let counts = reader.deviceCounts(push: slow)
            #expect(counts.count == 2000 && counts.values.allSatisfy { $0 == 1 })
            let progress = try await env.pushes.progress(id: slow.id, appID: env.app.id)
            #expect(progress?.audienceSize == 2000, "claimed again, it keeps the whole audience's size")
            await center.stop()
            await reader.stop()
        }
    }

    @Test func aPushCanceledWhilePausedAndReleasedCompletesWithItsCountsAddingUp() async throws {
        try await withCenterEnvironment { env in
            try await env.registerMany(2000)
            let reader = try env.startFakeSender()
            // One page of 20 batches, paced at 5 a second: the pause comes in the middle of it.
            var paged = settings(env, name: "center-pause-cancel", express: 0)
            paged.pageSize = 2000
            let center = try env.startCenter(paged)
            let slow = try await env.createPush(audience: .everyone, throttlePerSecond: 500)
            #expect(
                try await env.eventually {
                    try await env.pushes.push(id: slow.id, appID: env.app.id)?.batchesEmitted ?? 0 > 0
                })
            #expect(try await env.claims.setPaused(true, pushID: slow.id, appID: env.app.id))
            // Released: nobody holds it, and it still has batches it recorded but never produced.
            #expect(try await env.eventually { try await env.claims.control(pushID: slow.id)?.claimedBy == nil })
            #expect(try await !env.progress.unproducedBatches(pushID: slow.id).isEmpty)
            #expect(try await env.pushes.cancel(id: slow.id, appID: env.app.id))
            // A sweep counts the never-recorded remainder and the recorded, unsent batches canceled.
            #expect(
                try await env.eventually(timeout: .seconds(30)) {
                    try await env.pushes.push(id: slow.id, appID: env.app.id)?.completedAt != nil
                })
            let counters = try #require(try await env.pushes.counters(pushID: slow.id))
            #expect(counters.targeted == 2000 && counters.isComplete, "\(counters)")
            #expect(counters.accepted == Int64(reader.deviceCounts(push: slow).count))
            await center.stop()
            await reader.stop()
        }
    }

    @Test func claimsTakeEachAppsTurn() async throws {
        try await withCenterEnvironment { env in
            var busy: [Push] = []
            for _ in 0..<5 { busy.append(try await env.createPush(audience: .everyone)) }
            let lone = try await env.createPush(audience: .everyone, app: env.otherApp)
            let list = try await env.createPush(audience: PushAudience(aliases: ["someone"]))
            let paced = try await env.createPush(audience: .everyone, throttlePerSecond: 10)
            let paused = try await env.createPush(audience: .everyone, app: env.otherApp)
            #expect(try await env.claims.setPaused(true, pushID: paused.id, appID: env.otherApp.id))
            let mine = Set((busy + [lone, list, paced, paused]).map(\.id))
            let candidates = try await env.claims.claimCandidates(
                lease: .seconds(30), limits: [.bulk: 10_000, .express: 10_000, .paced: 10_000]
            ).filter { mine.contains($0.id) }
            let bulk = candidates.filter { $0.lane == .bulk }.map(\.id)
            // The other app's one push comes second, before this app's second: each app's turn.
            #expect(bulk.prefix(2) == [busy[0].id, lone.id] && bulk.dropFirst(2) == busy.dropFirst().map(\.id)[...])
            #expect(candidates.filter { $0.lane == .express }.map(\.id) == [list.id])
            #expect(candidates.filter { $0.lane == .paced }.map(\.id) == [paced.id])
            #expect(!candidates.contains { $0.id == paused.id }, "a paused push is not claimed")
            #expect(try await env.claims.claim([paused.id], by: "center-x", lease: .seconds(30)).isEmpty)
        }
    }
}
