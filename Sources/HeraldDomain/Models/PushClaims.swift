import Foundation
import HeraldAPNsVocabulary

/// A push a center may claim, and the lane it would take.
public struct ClaimCandidate: Sendable, Equatable {
    public var id: UUID
    public var lane: FanoutLane

    public init(id: UUID, lane: FanoutLane) {
        self.id = id
        self.lane = lane
    }
}

/// Which of a center's fan-out slots a push takes (`FanoutClaimRepository.laneSQL` in HeraldStore).
public enum FanoutLane: String, Sendable, CaseIterable, Hashable {
    /// A list audience (registration ids, aliases), unthrottled: over in a page or two.
    case express
    /// A throttled push or a recall: mostly waiting.
    case paced
    /// Every other push: broadcasts, tags, segments.
    case bulk
}

/// What an operator or the API has done to a push while it fans out.
public struct PushControl: Sendable, Equatable {
    public var state: PushState
    public var paused: Bool
    /// The center holding the fan-out, if any.
    public var claimedBy: String?

    public init(state: PushState, paused: Bool, claimedBy: String? = nil) {
        self.state = state
        self.paused = paused
        self.claimedBy = claimedBy
    }
}
