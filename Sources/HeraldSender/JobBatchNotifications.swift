import Foundation
import HeraldAPNs
import HeraldAPNsVocabulary
import HeraldHTTP2
import HeraldRecords
import NIOCore

/// The notifications of one job batch, as the APNs client reads them: the fields the push
/// shares, held once, and each target's token and payload index where the record put them. Each
/// request is written straight from them — the token's hex and the deterministic `apns-id` made
/// in the request's header block — so a batch of 500 holds no notification value, token String
/// or `apns-id` String per target.
struct JobBatchNotifications: APNsNotificationBatch {
    let pushID: UUID
    let shared: APNsSharedFields
    /// `shared`'s fields as header-block bytes, copied into each request.
    let encodedFields: HTTP2HeaderBlock
    let targets: DeviceTokens
    let payloadIndexes: [UInt32]
    /// The payloads the targets point at (a templated push's, rendered per device; otherwise one).
    let payloads: [ByteBuffer]
    /// What is wrong with each payload, if anything (``APNsSharedFields/problem(payload:)``),
    /// worked out once per payload rather than once per target.
    let payloadProblems: [String?]
    /// The targets (by position in `targets`) at this batch's indexes, in order; nil for all of them.
    private(set) var order: [Int]?

    init(_ record: PackedJobBatch) {
        let batch = record.header
        pushID = UUID(data: batch.pushID)
        shared = APNsSharedFields(
            topic: batch.apnsTopic, pushType: APNsPushType(batch.pushType),
            priority: APNsPriority(rawValue: Int(batch.priority)),
            expiration: batch.expirationS > 0 ? batch.expirationS : nil,
            collapseID: batch.collapseID.isEmpty ? nil : batch.collapseID)
        encodedFields = shared.encoded
        targets = record.targets
        payloadIndexes = record.payloadIndexes
        payloads = batch.payloads.isEmpty ? [ByteBuffer(bytes: batch.payload)] : batch.payloads.map(ByteBuffer.init)
        payloadProblems = payloads.map { [shared] in shared.problem(payload: $0) }
        order = nil
    }

    /// These notifications' targets at `indexes`, in that order: a round of retries. (The
    /// first round is usually every target in order: then this batch itself.)
    func subset(_ indexes: [Int]) -> JobBatchNotifications {
        if order == nil, indexes.elementsEqual(0..<targets.count) { return self }
        var subset = self
        subset.order = order.map { order in indexes.map { order[$0] } } ?? indexes
        return subset
    }

    var count: Int { order?.count ?? targets.count }

    /// The position in `targets` of the notification at `index`.
    func target(at index: Int) -> Int { order?[index] ?? index }

    /// The payload of the notification at `index`.
    func payload(at index: Int) -> ByteBuffer { payloads[Int(payloadIndexes[target(at: index)])] }

    func problem(at index: Int) -> String? {
        let target = target(at: index)
        if targets.tokenLength(at: target) == 0 { return APNsDeviceToken.problem }
        return payloadProblems[Int(payloadIndexes[target])]
    }

    func writeRequest(at index: Int, authority: String, authorization: String?, into block: inout HTTP2HeaderBlock)
        -> ByteBuffer
    {
        let target = target(at: index)
        let apnsID = APNsNotification.DeterministicID(pushID: pushID, deviceID: targets.deviceIDs[target])
        targets.withToken(at: target) { token in
            APNsSharedFields.writeRequest(
                deviceToken: Hexadecimal.Digits(token), apnsID: apnsID, authority: authority,
                authorization: authorization, encodedFields: encodedFields, into: &block)
        }
        return payloads[Int(payloadIndexes[target])]
    }

    /// The notification at `index` as a value: for the rare reader that needs one (a log line
    /// about a target that was not delivered), not the sending path.
    func notification(at index: Int) -> APNsNotification {
        let target = target(at: index)
        return APNsNotification(
            deviceToken: Hexadecimal.encode(targets.token(at: target)), shared: shared,
            apnsID: APNsNotification.deterministicID(pushID: pushID, deviceID: targets.deviceIDs[target]),
            payload: payload(at: index))
    }
}
