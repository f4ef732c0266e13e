import Foundation
@testable import HeraldCenter
import HeraldStore
import Testing

@Suite("Cutting and pacing (no I/O)")
struct FanoutPlanningTests {
    func target(_ id: Int64, _ environment: APNsEnvironment = .production, topic: String = "com.example") -> AudienceTarget {
        AudienceTarget(deviceID: id, token: [1, 2, 3, 4, 5, 6, 7, 8], environment: environment, topic: topic)
    }

    @Test func batchesHoldOneEnvironmentAndTopicAndCloseAtThePageEnd() {
        let cutter = BatchCutter(pushID: UUID(), batchSize: 3)
        var page: [AudienceTarget] = []
        for id in Int64(1)...10 { page.append(target(id, id % 4 == 0 ? .sandbox : .production)) }
        page.append(target(11, topic: "com.other"))
        let cuts = cutter.cut(page, firstSequence: 7)
        #expect(cuts.map(\.record.sequence) == Array(7..<(7 + cuts.count)))
        #expect(cuts.flatMap(\.targets).map(\.deviceID).sorted() == Array(Int64(1)...11))
        for cut in cuts {
            #expect(cut.targets.count <= 3)
            #expect(Set(cut.targets.map(\.environment)).count == 1 && Set(cut.targets.map(\.topic)).count == 1)
            #expect(cut.record.targetCount == cut.targets.count)
            #expect(cut.record.firstDevice == cut.targets.first?.deviceID && cut.record.lastDevice == cut.targets.last?.deviceID)
        }
        // The same page cuts the same way (a resumed fan-out makes the same batch ids).
        #expect(cutter.cut(page, firstSequence: 7).map(\.record) == cuts.map(\.record))
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
