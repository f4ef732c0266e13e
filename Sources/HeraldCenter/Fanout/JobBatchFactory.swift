import Foundation
import HeraldAPNs
import HeraldRecords
import HeraldStore

/// Turns a push and the targets of one cut batch into the `herald.jobs` record senders read.
/// Everything but the targets is worked out once per push.
struct JobBatchFactory: Sendable {
    let pushID: Data
    let appID: Data
    let pushType: APNsPushType
    let priority: UInt32
    let expiration: Int64
    let collapseID: String
    let payload: Data

    init(push: Push) {
        let definition = push.definition
        pushID = push.id.recordBytes
        appID = definition.appID.recordBytes
        pushType = APNsPushType(rawValue: definition.pushType) ?? .alert
        priority = UInt32(definition.priority)
        expiration = definition.expiresAt.map { Int64($0.timeIntervalSince1970.rounded(.up)) } ?? 0
        collapseID = definition.collapseID
        payload = Data(definition.payload)
    }

    /// The encoded `herald.jobs` record of `cut`, stamped `now`, and its key (the batch id).
    func record(_ cut: BatchCutter.Cut, now: Date = Date()) throws -> (key: Data, value: [UInt8]) {
        let batch = Herald_V1_JobBatch(
            pushID: pushID, appID: appID, sequence: UInt32(cut.record.sequence),
            environment: cut.record.environment == .sandbox ? .sandbox : .production,
            apnsTopic: pushType.topic(forBundleID: cut.record.topic), pushType: Self.recordPushType(pushType),
            priority: priority,
            expirationS: expiration, collapseID: collapseID, payload: payload, targets: [],
            createdAtMs: Int64(now.timeIntervalSince1970 * 1000))
        let targets = cut.targets
        return (
            batch.batchID,
            try batch.encodedRecord(
                deviceIDs: targets.deviceIDs, tokenBytes: targets.tokenBytes,
                tokenEnds: targets.tokenEnds)
        )
    }

    static func recordPushType(_ type: APNsPushType) -> Herald_V1_JobBatch.PushType {
        switch type {
        case .alert: .alert
        case .background: .background
        case .voip: .voip
        case .complication: .complication
        case .fileprovider: .fileprovider
        case .mdm: .mdm
        case .liveactivity: .liveactivity
        case .location: .location
        case .pushtotalk: .pushtotalk
        case .widgets: .widgets
        case .controls: .controls
        }
    }
}
