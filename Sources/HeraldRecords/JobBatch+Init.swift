#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Herald_V1_JobBatch {
    /// The most targets one batch carries (`HERALD_CENTER_BATCH_SIZE` is at most this); senders
    /// refuse a record with more.
    public static let maximumTargets = 500

    /// Batch `sequence` of a push. The batch id is derived (``batchID(pushID:sequence:)``), never
    /// chosen, so a batch produced again after a restart carries the same id.
    public init(
        pushID: Data, appID: Data, sequence: UInt32, environment: Herald_V1_ApnsEnvironment, apnsTopic: String,
        pushType: PushType, priority: UInt32, expirationS: Int64, collapseID: String, payload: Data,
        targets: [Target], createdAtMs: Int64
    ) {
        self.init()
        self.batchID = Self.batchID(pushID: pushID, sequence: sequence)
        self.pushID = pushID
        self.appID = appID
        self.sequence = sequence
        self.environment = environment
        self.apnsTopic = apnsTopic
        self.pushType = pushType
        self.priority = priority
        self.expirationS = expirationS
        self.collapseID = collapseID
        self.payload = payload
        self.targets = targets
        self.createdAtMs = createdAtMs
    }
}

extension Herald_V1_JobBatch.Target {
    /// A device and its raw token.
    public init(deviceID: UInt64, token: Data) {
        self.init()
        self.deviceID = deviceID
        self.token = token
    }
}

extension Herald_V1_OutcomeBatch {
    /// The outcome of `batch`, with its ids and no device yet: every sender's outcome starts here.
    public init(of batch: Herald_V1_JobBatch) {
        self.init()
        schemaVersion = 1
        batchID = batch.batchID
        pushID = batch.pushID
        appID = batch.appID
    }
}
