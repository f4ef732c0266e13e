import Foundation
import HeraldAPNsVocabulary
import HeraldCore
import HeraldDomain
import HeraldRecords
import Testing

@testable import HeraldCenter
@testable import HeraldStore

@Suite("Cutting and pacing (no I/O)")
struct FanoutPlanningTests {
    func target(_ id: Int64, _ environment: APNsEnvironment = .production, topic: String = "com.example")
        -> AudienceTarget
    {
        AudienceTarget(deviceID: id, token: [1, 2, 3, 4, 5, 6, 7, 8], environment: environment, topic: topic)
    }

    @Test("the center's largest batch size is what a job batch record holds")
    func batchSizeBoundIsTheRecords() {
        // The settings (HeraldCore) cannot see the record (HeraldRecords): the two are held equal here.
        #expect(CenterSettings.maximumBatchSize == Herald_V1_JobBatch.maximumTargets)
    }

    @Test func batchesHoldOneEnvironmentAndTopicAndCloseAtThePageEnd() {
        let cutter = BatchCutter(pushID: UUID(), batchSize: 3)
        var targets: [AudienceTarget] = []
        for id in Int64(1)...10 { targets.append(target(id, id % 4 == 0 ? .sandbox : .production)) }
        targets.append(target(11, topic: "com.other"))
        let page = AudiencePage(targets)
        let cuts = cutter.cut(page, firstSequence: 7)
        #expect(cuts.map(\.record.sequence) == Array(7..<(7 + cuts.count)))
        #expect(cuts.flatMap(\.targets.deviceIDs).sorted() == Array(Int64(1)...11))
        let byID = Dictionary(uniqueKeysWithValues: targets.map { ($0.deviceID, $0) })
        for cut in cuts {
            let members = cut.targets.deviceIDs.map { byID[$0]! }
            #expect(cut.targets.count <= 3)
            #expect(members.allSatisfy { $0.environment == cut.record.environment && $0.topic == cut.record.topic })
            #expect((0..<cut.targets.count).allSatisfy { Array(cut.targets.token(at: $0)) == members[$0].token })
            #expect(cut.record.targetCount == cut.targets.count)
            #expect(
                cut.record.firstDevice == cut.targets.deviceIDs.first
                    && cut.record.lastDevice == cut.targets.deviceIDs.last)
        }
        // The same page cuts the same way (a resumed fan-out makes the same batch ids).
        #expect(cutter.cut(page, firstSequence: 7).map(\.record) == cuts.map(\.record))
    }

    /// A cutter of batches of 4 whose budget a device with a 60- to 100-byte value (six bytes a
    /// byte) takes most of, and an empty one little; and the render of an empty value.
    func noteCutter() throws -> (cutter: BatchCutter, budget: BatchCutter.RenderBudget, empty: Int) {
        let plain = APNsPayload(alert: .details(.init(title: "{{note}}", body: "")))
        let template = try PayloadTemplate(stored: PayloadTemplate.storedJSON(default: plain.encoded(), localized: []))
        let empty = template.maximumRenderedCount { _ in 0 }
        let budget = BatchCutter.RenderBudget(
            bytes: 2 * empty + 650, template: template, firstName: 0, stamp: 10, limit: 4096)
        return (BatchCutter(pushID: UUID(), batchSize: 4, renderBudget: budget), budget, empty)
    }

    @Test(
        "a templated push's batch closes at its size or before its renders' bound passes the budget, whichever comes first"
    )
    func renderBudgetClosesBatches() throws {
        let (cutter, budget, empty) = try noteCutter()
        let lengths = [0, 0, 0, 0, 0, 0, 0, 100, 0, 3, 60, 5, 5, 5, 5, 5, 5, 5, 90, 0, 0]
        var page = AudiencePage()
        let group = page.group(AudienceGroup(environment: .production, topic: "com.example"))
        page.devices = DeviceTokens(reservingCapacity: lengths.count, valuesPerDevice: 1)
        for (index, length) in lengths.enumerated() {
            page.append(deviceID: Int64(index + 1), token: [UInt8(index)], group: group)
            page.devices.appendValue([UInt8](repeating: 0x61, count: length))
        }
        let bounds = budget.bounds(page.devices)
        #expect(bounds[7] == 10 + empty + 600 && bounds[0] == 10 + empty, "six bytes a byte of value, the key's ten")
        let cuts = cutter.cut(page, firstSequence: 0)
        #expect(cuts.flatMap(\.targets.deviceIDs) == (1...Int64(lengths.count)).map { $0 })
        var first = 0
        for (number, cut) in cuts.enumerated() {
            let taken = bounds[first..<(first + cut.targets.count)].reduce(0, +)
            #expect(cut.targets.count <= 4 && taken <= budget.bytes, "batch \(number)")
            first += cut.targets.count
            if first < lengths.count {
                #expect(
                    cut.targets.count == 4 || taken + bounds[first] > budget.bytes,
                    "batch \(number) closed with room for the next device")
            }
        }
        let sizes = cuts.map(\.targets.count)
        #expect(sizes.contains { $0 < 4 } && sizes.contains(4), "\(sizes)")
        // Without a budget the same page is cut by size alone.
        let bySize = BatchCutter(pushID: UUID(), batchSize: 4).cut(page, firstSequence: 0).map(\.targets.count)
        #expect(bySize == [4, 4, 4, 4, 4, 1] && sizes != bySize)
    }

    @Test(
        "a templated push's budget is kept per environment and topic: with two groups' devices interleaved, each group's batches fit the budget and close only when full or when its next device would not fit"
    )
    func renderBudgetPerGroup() throws {
        let (cutter, budget, _) = try noteCutter()
        var page = AudiencePage()
        let groups = [
            page.group(AudienceGroup(environment: .production, topic: "com.example")),
            page.group(AudienceGroup(environment: .sandbox, topic: "com.example")),
        ]
        // Long values mostly in the first group, short ones in the second: a budget shared between
        // the groups, or one group's bytes reset by the other's batch closing, cuts differently.
        let long: [Int] = [0, 100, 5, 60, 0, 90]
        let lengths: [Int] = (0..<60).map { (index: Int) -> Int in index % 2 == 0 ? long[index / 2 % 6] : index % 7 }
        page.devices = DeviceTokens(reservingCapacity: lengths.count, valuesPerDevice: 1)
        for (index, length) in lengths.enumerated() {
            page.append(deviceID: Int64(index + 1), token: [UInt8(index)], group: groups[index % 2])
            page.devices.appendValue([UInt8](repeating: 0x61, count: length))
        }
        let bounds = budget.bounds(page.devices)
        let cuts = cutter.cut(page, firstSequence: 0)
        #expect(cuts.flatMap(\.targets.deviceIDs).sorted() == (1...Int64(lengths.count)).map { $0 })
        for (groupIndex, environment) in [APNsEnvironment.production, .sandbox].enumerated() {
            let mine = cuts.filter { $0.record.environment == environment }
            let devices = mine.flatMap(\.targets.deviceIDs)
            #expect(devices == (1...Int64(lengths.count)).filter { Int($0 - 1) % 2 == groupIndex }, "\(environment)")
            for (number, cut) in mine.enumerated() {
                let taken = cut.targets.deviceIDs.map { bounds[Int($0 - 1)] }.reduce(0, +)
                #expect(cut.targets.count <= 4 && taken <= budget.bytes, "\(environment) batch \(number)")
                if number + 1 < mine.count, let next = mine[number + 1].targets.deviceIDs.first {
                    #expect(
                        cut.targets.count == 4 || taken + bounds[Int(next - 1)] > budget.bytes,
                        "\(environment) batch \(number) closed with room for the group's next device")
                }
            }
        }
        let sizes = cuts.map(\.targets.count)
        #expect(sizes.contains { $0 < 4 } && sizes.contains(4), "\(sizes)")
    }

    @Test func aJobRecordWithPackedTargetsDecodesToTheBatch() throws {
        let push = Push(
            definition: NewPush(
                id: UUID(), appID: UUID(), audienceJSON: "{}", notificationJSON: "{}",
                payload: Array(#"{"aps":{"alert":"hi"}}"#.utf8)),
            fanoutCursor: 0, batchesEmitted: 0, createdAt: Date())
        let factory = try JobBatchFactory(push: push)
        var devices = DeviceTokens()
        devices.append(deviceID: 1, token: [0xAB, 0xCD])
        devices.append(deviceID: 300, token: [UInt8](repeating: 7, count: 32))
        devices.append(deviceID: Int64.max, token: [UInt8](repeating: 0xFF, count: 100))
        let cut = BatchCutter.Cut(
            record: RecordedBatch(
                pushID: push.id, sequence: 42, firstDevice: 1, lastDevice: Int64.max,
                targetCount: 3, environment: .sandbox, topic: "com.example.app"),
            targets: devices)
        let (key, value) = try factory.record(cut)
        let batch = try Herald_V1_JobBatch.decodeRecord(value)
        #expect(key == batch.batchID)
        #expect(batch.batchID == Herald_V1_JobBatch.batchID(pushID: push.id.recordBytes, sequence: 42))
        #expect(batch.sequence == 42 && batch.environment == .sandbox && batch.apnsTopic == "com.example.app")
        #expect(batch.collapseID == push.id.uuidString.lowercased())
        #expect(batch.targets.map(\.deviceID) == [1, 300, UInt64(Int64.max)])
        #expect(
            batch.targets.map { Array($0.token) } == [
                [0xAB, 0xCD], [UInt8](repeating: 7, count: 32), [UInt8](repeating: 0xFF, count: 100),
            ])
        #expect(
            String(decoding: batch.payload, as: UTF8.self)
                == #"{"aps":{"alert":"hi"},"herald":{"push_id":"\#(push.id.uuidString.lowercased())"}}"#,
            "the payload with the push id under the herald key")

        // A recall's payload carries its ids already and is sent as stored.
        var recall = push
        recall.definition.recallOf = UUID()
        recall.definition.payload = Array(#"{"aps":{"content-available":1},"herald":{"revoke":"x"}}"#.utf8)
        let recalled = try Herald_V1_JobBatch.decodeRecord(try JobBatchFactory(push: recall).record(cut).value)
        #expect(Array(recalled.payload) == recall.definition.payload)
        #expect(recalled.revokesPushID == recall.definition.recallOf?.recordBytes, "names the push it revokes")
        #expect(batch.revokesPushID.isEmpty && batch.channel == .auto)
    }

    @Test("the herald key: added before the payload's closing brace, at most reservedBytes long")
    func heraldKeyIsAddedToAnyObject() throws {
        let id = UUID()
        for payload in [#"{}"#, #"{"aps":{}}"#, "{\"aps\":{\"alert\":\"}\"}}\n", "{ }"] {
            let stamped = HeraldPayloadKey.stamped(Array(payload.utf8), pushID: id)
            let object = try JSONSerialization.jsonObject(with: Data(stamped)) as? [String: Any]
            #expect((object?["herald"] as? [String: String]) == ["push_id": id.uuidString.lowercased()])
            #expect(stamped.count <= payload.utf8.count + HeraldPayloadKey.reservedBytes)
        }
        #expect(HeraldPayloadKey.stamped(Array(#"{"aps":{}}"#.utf8), pushID: id).count == 10 + 60)
        #expect(
            HeraldPayloadKey.stamped(Array("[1]".utf8), pushID: id) == Array("[1]".utf8), "not an object: as it was")
        // A push accepted before the key was reserved: too large with it, or with a herald of its own.
        let full = Array(#"{"aps":{"alert":"\#(String(repeating: "x", count: 4070))"}}"#.utf8)
        #expect(JobBatchFactory.stamped(full, with: .init(pushID: id), limit: 4096) == full)
        let own = Array(#"{"aps":{},"herald":1}"#.utf8)
        #expect(JobBatchFactory.stamped(own, with: .init(pushID: id), limit: 4096) == own)
        #expect(JobBatchFactory.stamped(Array(#"{"aps":{}}"#.utf8), with: .init(pushID: id), limit: 4096).count == 70)
    }

    @Test func pacerSpreadsTargetsAtItsRateAndDoesNotMakeUpForAPause() {
        let start = ContinuousClock.now
        var pacer = EmissionPacer(rate: 1000, start: start)
        #expect(pacer.delay(now: start) == .zero)
        pacer.emit(500)
        #expect(pacer.delay(now: start) == .milliseconds(500))
        #expect(pacer.delay(now: start + .milliseconds(600)) == .zero)
        pacer.emit(500)
        #expect(pacer.delay(now: start + .milliseconds(600)) == .milliseconds(400))
        // Paused for a minute: the next batch waits for nothing, the one after for its share.
        pacer.restart(now: start + .seconds(60))
        #expect(pacer.delay(now: start + .seconds(60)) == .zero)
        pacer.emit(250)
        #expect(pacer.delay(now: start + .seconds(60)) == .milliseconds(250))
        #expect(pacer.secondsToEmit(2000) == 2)
    }
}
