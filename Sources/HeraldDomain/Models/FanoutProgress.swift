import Foundation
import HeraldAPNsVocabulary

/// A batch of one push as herald-center cut it: `targetCount` devices of one environment and
/// topic, with ids from `firstDevice` through `lastDevice`. With the push's audience these rebuild
/// the batch when it has to be produced again.
public struct RecordedBatch: Sendable, Equatable {
    public var pushID: UUID
    public var sequence: Int
    public var firstDevice: Int64
    public var lastDevice: Int64
    public var targetCount: Int
    public var environment: APNsEnvironment
    /// The devices' topic (the bundle id they registered with).
    public var topic: String
    /// How many times it was produced again for want of an outcome.
    public var redriven: Int
    /// An A/B test's batch: the variant (``PushSplit``) all its devices get; nil for every other push.
    public var variant: Int? = nil

    public init(
        pushID: UUID, sequence: Int, firstDevice: Int64, lastDevice: Int64, targetCount: Int,
        environment: APNsEnvironment, topic: String, redriven: Int = 0
    ) {
        self.redriven = redriven
        self.pushID = pushID
        self.sequence = sequence
        self.firstDevice = firstDevice
        self.lastDevice = lastDevice
        self.targetCount = targetCount
        self.environment = environment
        self.topic = topic
    }
}

/// The result of recording a page of batches.
public enum PageRecording: Sendable, Equatable {
    /// Recorded; the fan-out goes on — after the pause ends when `paused` (the page's batches
    /// are recorded either way and may be produced).
    case recorded(paused: Bool)
    /// The push was canceled meanwhile: nothing was recorded; count the remainder as canceled.
    case canceled
    /// Another center holds the fan-out now (this one's claim lapsed): stop without writing.
    case claimLost
}
