import HeraldDomain

/// The decisions of a fan-out's page loop, without IO: what to do next given what the last step
/// found. `FanoutRunner` is the shell that reads pages, records them, produces batches and looks
/// the push's control up, feeding each result back in; every branch here is unit-tested without a
/// database or a broker (FanoutStepsTests).
///
/// A loop turn is: look the control up (when needed) → read a page → record it (its batches, the
/// cursor and the claim in one transaction) → produce its batches → the next turn. It ends at the
/// end of the audience (finish, or wait for the next wave), on a pause, a cancel or a lost claim.
/// An unthrottled fan-out with a window holds before each next page while its notifications
/// without an outcome fill the window, so it never runs further ahead of the senders than that.
struct FanoutSteps: Sendable, Equatable {
    /// What the shell does next.
    enum Action: Equatable {
        /// Look the push's state, pause and claim up (and, paced, wait for the rate); answer with
        /// ``controlChecked(_:)``.
        case checkControl
        /// Unthrottled with a window: wait while the push's targets without an outcome fill the
        /// window, looking the control up meanwhile; answer with ``controlChecked(_:)``.
        case holdForOutcomes
        /// Read the page after `cursor`; answer with ``pageRead(lastDeviceID:)``.
        case readPage(after: Int64)
        /// Cut the page just read into batches numbered from `firstSequence`, record them with
        /// `cursor` (the page's last device) as the fan-out's cursor; answer with
        /// ``pageRecorded(_:batches:)``.
        case recordPage(firstSequence: Int, cursor: Int64)
        /// Unthrottled: produce the recorded batches in the background, first waiting for one of
        /// the pages already producing when `afterOneFinishes` (at most
        /// ``FanoutSteps/pagesProducing`` wait for the broker at once); answer with ``producing()``.
        case produce(afterOneFinishes: Bool)
        /// Throttled: produce the recorded batches one at a time at the pacer's rate; answer with
        /// ``pacedProduced(continuing:)``.
        case producePaced
        /// The loop is over.
        case end(Ending)
    }

    /// Why the loop ended, and what the shell still does about it.
    enum Ending: Equatable {
        /// Every device of the audience (or of this wave) is in batches, and no wave follows: wait
        /// for the batches still producing, then finish the fan-out.
        case finish
        /// This wave's devices are in batches: wait for the batches still producing, then let the
        /// push wait for wave `index`'s time.
        case awaitWave(index: Int)
        /// Paused between pages: wait for the batches still producing, then give the claim (and
        /// the center's slot) back.
        case paused
        /// Canceled while recording a page: count what was never sent as canceled.
        case canceled
        /// Another center holds the claim now.
        case claimLost
        /// Stopped by a step that already did what stopping needs (a cancel counted, a claim lost
        /// and logged, a paced batch's pause or cancel handled).
        case stopped
    }

    /// What a control look-up found (``FanoutRunner`` waits out a pause that keeps the slot and
    /// the pacer's delay before answering).
    enum Control: Equatable {
        case proceed
        /// Paused: the slot is to be given back.
        case paused
        /// Canceled: what was never sent is already counted as canceled.
        case canceled
        /// Another center holds the claim now (or the push is gone).
        case lost
    }

    /// Pages of an unthrottled fan-out whose batches may wait for the broker at once.
    static let pagesProducing = 4

    /// Where the next page starts: the last registration id recorded.
    private(set) var cursor: Int64
    /// The next batch's sequence number.
    private(set) var nextSequence: Int
    /// Throttled: the control (and the pacer) comes before every page, and batches go one at a
    /// time. Unthrottled: recording a page tells whether the push was paused, so only the first
    /// page and a page recorded while paused need a look-up.
    let paced: Bool
    /// The wave being fanned out, and how many the push has (0 or 1 for a push not in waves).
    let wave: Int
    let waves: Int
    /// Unthrottled: hold for outcomes before each next page (``Action/holdForOutcomes``).
    let windowed: Bool
    private var controlNeeded = true
    private var readLastDeviceID: Int64?
    private var pagesInFlight = 0

    init(cursor: Int64, nextSequence: Int, paced: Bool, wave: Int = 0, waves: Int = 0, windowed: Bool = false) {
        self.cursor = cursor
        self.nextSequence = nextSequence
        self.paced = paced
        self.wave = wave
        self.waves = waves
        self.windowed = windowed && !paced
    }

    /// The first step.
    mutating func start() -> Action { nextTurn() }

    mutating func controlChecked(_ control: Control) -> Action {
        switch control {
        case .proceed:
            controlNeeded = false
            return .readPage(after: cursor)
        case .paused: return .end(.paused)
        case .canceled, .lost: return .end(.stopped)
        }
    }

    /// A page was read; `lastDeviceID` nil when the audience (or the wave) has no more devices.
    mutating func pageRead(lastDeviceID: Int64?) -> Action {
        guard let lastDeviceID else {
            return .end(wave + 1 < waves ? .awaitWave(index: wave + 1) : .finish)
        }
        readLastDeviceID = lastDeviceID
        return .recordPage(firstSequence: nextSequence, cursor: lastDeviceID)
    }

    /// The page read last was recorded (or not) as `batches` batches.
    mutating func pageRecorded(_ recording: PageRecording, batches: Int) -> Action {
        switch recording {
        case .recorded(let paused):
            controlNeeded = paused
            if let last = readLastDeviceID { cursor = last }
            readLastDeviceID = nil
            nextSequence += batches
            if paced { return .producePaced }
            let full = pagesInFlight == Self.pagesProducing
            if !full { pagesInFlight += 1 }
            return .produce(afterOneFinishes: full)
        case .canceled: return .end(.canceled)
        case .claimLost: return .end(.claimLost)
        }
    }

    /// An unthrottled page's batches are producing in the background.
    mutating func producing() -> Action { nextTurn() }

    /// A throttled page's batches were produced (`continuing`), or the fan-out stopped among them
    /// (paused, canceled or taken over, already handled).
    mutating func pacedProduced(continuing: Bool) -> Action {
        continuing ? nextTurn() : .end(.stopped)
    }

    private mutating func nextTurn() -> Action {
        if controlNeeded || paced { return .checkControl }
        return windowed ? .holdForOutcomes : .readPage(after: cursor)
    }
}
