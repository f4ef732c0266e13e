import HeraldDomain
import Testing

@testable import HeraldCenter

/// The fan-out's page loop as decisions (FanoutSteps), without a database or a broker: which step
/// follows which result, where the cursor and the batch numbers stand, and how the loop ends.
@Suite("Fan-out steps (pure logic)")
struct FanoutStepsTests {
    @Test("unthrottled: one control look-up, then read, record, produce page after page; the end finishes")
    func unthrottled() {
        var steps = FanoutSteps(cursor: 0, nextSequence: 0, paced: false)
        #expect(steps.start() == .checkControl)
        #expect(steps.controlChecked(.proceed) == .readPage(after: 0))
        #expect(steps.pageRead(lastDeviceID: 1000) == .recordPage(firstSequence: 0, cursor: 1000))
        #expect(steps.pageRecorded(.recorded(paused: false), batches: 2) == .produce(afterOneFinishes: false))
        #expect(steps.cursor == 1000 && steps.nextSequence == 2)
        // No second look-up: recording told it the push is not paused.
        #expect(steps.producing() == .readPage(after: 1000))
        #expect(steps.pageRead(lastDeviceID: 2000) == .recordPage(firstSequence: 2, cursor: 2000))
        #expect(steps.pageRecorded(.recorded(paused: false), batches: 3) == .produce(afterOneFinishes: false))
        #expect(steps.producing() == .readPage(after: 2000))
        #expect(steps.pageRead(lastDeviceID: nil) == .end(.finish))
        #expect(steps.cursor == 2000 && steps.nextSequence == 5)
    }

    @Test("with a window: before each next page it holds for outcomes; a pause or a cancel found there ends the loop")
    func windowed() {
        var steps = FanoutSteps(cursor: 0, nextSequence: 0, paced: false, windowed: true)
        #expect(steps.start() == .checkControl)
        #expect(steps.controlChecked(.proceed) == .readPage(after: 0))
        _ = steps.pageRead(lastDeviceID: 1000)
        #expect(steps.pageRecorded(.recorded(paused: false), batches: 2) == .produce(afterOneFinishes: false))
        #expect(steps.producing() == .holdForOutcomes)
        #expect(steps.controlChecked(.proceed) == .readPage(after: 1000))
        _ = steps.pageRead(lastDeviceID: 2000)
        _ = steps.pageRecorded(.recorded(paused: false), batches: 2)
        #expect(steps.producing() == .holdForOutcomes)
        #expect(steps.controlChecked(.paused) == .end(.paused))

        var canceled = FanoutSteps(cursor: 0, nextSequence: 0, paced: false, windowed: true)
        _ = canceled.start()
        _ = canceled.controlChecked(.proceed)
        _ = canceled.pageRead(lastDeviceID: 10)
        _ = canceled.pageRecorded(.recorded(paused: false), batches: 1)
        #expect(canceled.producing() == .holdForOutcomes)
        #expect(canceled.controlChecked(.canceled) == .end(.stopped))

        // A throttled push has its pacer, not the window.
        var paced = FanoutSteps(cursor: 0, nextSequence: 0, paced: true, windowed: true)
        _ = paced.start()
        _ = paced.controlChecked(.proceed)
        _ = paced.pageRead(lastDeviceID: 10)
        #expect(paced.pageRecorded(.recorded(paused: false), batches: 1) == .producePaced)
        #expect(paced.pacedProduced(continuing: true) == .checkControl)
    }

    @Test("a resumed fan-out starts at its cursor and its next batch number")
    func resumed() {
        var steps = FanoutSteps(cursor: 41_000, nextSequence: 17, paced: false)
        _ = steps.start()
        #expect(steps.controlChecked(.proceed) == .readPage(after: 41_000))
        #expect(steps.pageRead(lastDeviceID: 42_000) == .recordPage(firstSequence: 17, cursor: 42_000))
    }

    @Test("at most four pages wait for the broker: the fifth waits for one of them first")
    func productionWindow() {
        var steps = FanoutSteps(cursor: 0, nextSequence: 0, paced: false)
        _ = steps.start()
        _ = steps.controlChecked(.proceed)
        var waited: [Bool] = []
        for page in 1...6 {
            _ = steps.pageRead(lastDeviceID: Int64(page * 100))
            guard case .produce(let afterOneFinishes) = steps.pageRecorded(.recorded(paused: false), batches: 1)
            else {
                Issue.record("page \(page) was not produced")
                return
            }
            waited.append(afterOneFinishes)
            _ = steps.producing()
        }
        #expect(waited == [false, false, false, false, true, true])
        #expect(FanoutSteps.pagesProducing == 4)
    }

    @Test("a page recorded while paused: the next turn looks the control up, and a pause gives the slot back")
    func pausedBetweenPages() {
        var steps = FanoutSteps(cursor: 0, nextSequence: 0, paced: false)
        _ = steps.start()
        _ = steps.controlChecked(.proceed)
        _ = steps.pageRead(lastDeviceID: 500)
        // The page's batches are recorded either way, and produced.
        #expect(steps.pageRecorded(.recorded(paused: true), batches: 1) == .produce(afterOneFinishes: false))
        #expect(steps.producing() == .checkControl)
        #expect(steps.controlChecked(.paused) == .end(.paused))
        #expect(steps.cursor == 500)
    }

    @Test("throttled: the control (and the pacer) before every page, batches produced paced")
    func paced() {
        var steps = FanoutSteps(cursor: 0, nextSequence: 0, paced: true)
        #expect(steps.start() == .checkControl)
        #expect(steps.controlChecked(.proceed) == .readPage(after: 0))
        _ = steps.pageRead(lastDeviceID: 10)
        #expect(steps.pageRecorded(.recorded(paused: false), batches: 1) == .producePaced)
        #expect(steps.pacedProduced(continuing: true) == .checkControl)
        #expect(steps.controlChecked(.proceed) == .readPage(after: 10))
        _ = steps.pageRead(lastDeviceID: 20)
        _ = steps.pageRecorded(.recorded(paused: false), batches: 1)
        // Paused, canceled or taken over among the paced batches: handled there, the loop stops.
        #expect(steps.pacedProduced(continuing: false) == .end(.stopped))
    }

    @Test("canceled or taken over while recording a page: nothing moves, the loop ends saying which")
    func recordingRefused() {
        var canceled = FanoutSteps(cursor: 7, nextSequence: 3, paced: false)
        _ = canceled.start()
        _ = canceled.controlChecked(.proceed)
        _ = canceled.pageRead(lastDeviceID: 99)
        #expect(canceled.pageRecorded(.canceled, batches: 2) == .end(.canceled))
        #expect(canceled.cursor == 7 && canceled.nextSequence == 3)

        var lost = FanoutSteps(cursor: 7, nextSequence: 3, paced: true)
        _ = lost.start()
        _ = lost.controlChecked(.proceed)
        _ = lost.pageRead(lastDeviceID: 99)
        #expect(lost.pageRecorded(.claimLost, batches: 2) == .end(.claimLost))
        #expect(lost.cursor == 7)
    }

    @Test("a control look-up that finds the push canceled or taken over stops the loop")
    func stoppedByControl() {
        for control in [FanoutSteps.Control.canceled, .lost] {
            var steps = FanoutSteps(cursor: 0, nextSequence: 0, paced: false)
            _ = steps.start()
            #expect(steps.controlChecked(control) == .end(.stopped))
        }
    }

    @Test("in waves: the end of a wave that is not the last waits for the next one; the last finishes")
    func waves() {
        var first = FanoutSteps(cursor: 0, nextSequence: 0, paced: false, wave: 0, waves: 3)
        _ = first.start()
        _ = first.controlChecked(.proceed)
        #expect(first.pageRead(lastDeviceID: nil) == .end(.awaitWave(index: 1)))

        var last = FanoutSteps(cursor: 0, nextSequence: 9, paced: false, wave: 2, waves: 3)
        _ = last.start()
        _ = last.controlChecked(.proceed)
        #expect(last.pageRead(lastDeviceID: nil) == .end(.finish))
    }
}
