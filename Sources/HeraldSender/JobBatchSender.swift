import Foundation
import NIOCore
import HeraldAPNs
import HeraldRecords
import Logging
import Synchronization

/// Sends every target of one job batch through an ``APNsClient`` and returns the batch's
/// outcome record: each target ends accepted, rejected (with APNs' reason, status and the 410
/// timestamp) or expired — exactly one of them.
///
/// Retryable answers (429, 500, 503, timeouts, lost connections) are sent again with the
/// ``RetryPolicy``'s back-off, never past the batch's expiration. The `apns-id` of each
/// notification is derived from the push and the device, and an `apns-collapse-id` is always
/// set (the push's own, or one derived from the push id), so a batch delivered twice replaces
/// rather than stacks on the phone.
///
/// This is the sender worker's core; ``SenderWorker`` around it consumes the batches, loads the
/// credentials, publishes the outcomes and stores the offsets.
public struct JobBatchSender: Sendable {
    public var retryPolicy: RetryPolicy
    /// Milliseconds since 1970 (injectable for tests).
    public var now: @Sendable () -> Int64
    /// Where each batch's counts and latencies go, if anywhere.
    public var metrics: SenderMetrics?
    /// Final rejections and expirations are logged at debug level with the push id, the apns-id
    /// and the token's first 8 hex digits — never the whole token.
    public var logger = Logger(label: "herald.sender.batch")

    public init(retryPolicy: RetryPolicy = .init(), metrics: SenderMetrics? = nil,
                now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) }) {
        self.retryPolicy = retryPolicy
        self.metrics = metrics
        self.now = now
    }

    /// Sends `batch` and returns its outcomes.
    public func send(_ batch: Herald_V1_JobBatch, with client: APNsClient) async -> Herald_V1_OutcomeBatch {
        let pushID = UUID(data: batch.pushID)
        let pushType = APNsPushType(batch.pushType)
        let priority = APNsPriority(rawValue: Int(batch.priority))
        let expiration = batch.expirationS > 0 ? batch.expirationS : nil
        let collapseID = batch.collapseID.isEmpty ? Self.collapseID(pushID: pushID) : batch.collapseID
        let payload = ByteBuffer(bytes: batch.payload)

        var outcomes = Herald_V1_OutcomeBatch()
        outcomes.schemaVersion = 1
        outcomes.batchID = batch.batchID
        outcomes.pushID = batch.pushID
        outcomes.appID = batch.appID
        var attempts = 0
        var latencies: [Double] = []
        latencies.reserveCapacity(batch.targets.count)
        // A few lanes per batch rather than a task per target (the APNs client bounds what is in
        // flight anyway, and tasks cost allocations). A lane gives each target it takes a first
        // attempt at once and keeps the ones to retry aside until their back-off is over, so a
        // retry storm on some targets never holds back the first attempt of the others.
        let targets = batch.targets
        let next = TargetCursor()
        let lanes = min(targets.count, Self.lanesPerBatch)
        await withTaskGroup(of: [(UInt64, TargetResult, Int, Double)].self) { group in
            for _ in 0..<lanes {
                group.addTask {
                    var done: [(UInt64, TargetResult, Int, Double)] = []
                    var waiting: [PendingTarget] = []
                    var generator = SystemRandomNumberGenerator()
                    while true {
                        var pending: PendingTarget
                        // The clock is read only when retries wait: a first attempt needs none.
                        if !waiting.isEmpty, let due = Self.takeDue(from: &waiting, now: self.now()) {
                            pending = due
                        } else if case let index = next.take(), index < targets.count {
                            let target = targets[index]
                            pending = PendingTarget(
                                deviceID: target.deviceID,
                                notification: APNsNotification(
                                    deviceToken: target.token.hexString, topic: batch.apnsTopic, pushType: pushType, priority: priority,
                                    expiration: expiration, collapseID: collapseID,
                                    apnsID: APNsNotification.deterministicID(pushID: pushID, deviceID: Int64(bitPattern: target.deviceID)),
                                    payload: payload),
                                attempts: 0, dueMilliseconds: 0, start: .now)
                        } else if let earliest = waiting.map(\.dueMilliseconds).min() {
                            try? await Task.sleep(for: .milliseconds(max(1, earliest - self.now())))
                            continue
                        } else {
                            break
                        }
                        pending.attempts += 1
                        switch await self.attempt(pending.notification, attempt: pending.attempts, client: client,
                                                  expiresAtSeconds: expiration, generator: &generator) {
                        case .retry(let due):
                            pending.dueMilliseconds = due
                            waiting.append(pending)
                        case .finished(let result):
                            let elapsed = ContinuousClock.now - pending.start
                            done.append((pending.deviceID, result, pending.attempts,
                                         Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15))
                        }
                    }
                    return done
                }
            }
            for await lane in group {
                for (deviceID, result, tries, latency) in lane {
                    attempts += tries
                    latencies.append(latency)
                    switch result {
                    case .accepted: outcomes.acceptedDeviceIds.append(deviceID)
                    case .failed(var failure):
                        failure.deviceID = deviceID
                        outcomes.failures.append(failure)
                        logger.debug("notification not delivered", metadata: [
                            "push": "\(pushID)", "device": "\(deviceID)",
                            "apns-id": "\(APNsNotification.deterministicID(pushID: pushID, deviceID: Int64(bitPattern: deviceID)))",
                            "token": "\(batch.targets.first { $0.deviceID == deviceID }.map { String($0.token.hexString.prefix(8)) + "…" } ?? "?")",
                            "outcome": "\(Self.statusName(failure.status))", "reason": "\(failure.reason)", "attempts": "\(failure.attempts)"])
                    }
                }
            }
        }
        outcomes.acceptedDeviceIds.sort()
        outcomes.failures.sort { $0.deviceID < $1.deviceID }
        outcomes.completedAtMs = now()
        metrics?.record(accepted: outcomes.acceptedDeviceIds.count,
                        failures: outcomes.failures.map { (Self.statusName($0.status), $0.reason) },
                        attempts: attempts, latencies: latencies)
        return outcomes
    }

    static func statusName(_ status: Herald_V1_OutcomeBatch.Status) -> String {
        switch status {
        case .rejected: "rejected"
        case .expired: "expired"
        case .canceled: "canceled"
        default: "unknown"
        }
    }

    /// Concurrent sends per batch (with 8 batches in flight, 2,048: about the APNs client's
    /// default in-flight bound).
    static let lanesPerBatch = 256

    enum TargetResult: Sendable {
        case accepted
        case failed(Herald_V1_OutcomeBatch.Failure)
    }

    /// A target being sent: what to send, how often it was sent, when to send it again.
    struct PendingTarget {
        var deviceID: UInt64
        var notification: APNsNotification
        var attempts: Int
        var dueMilliseconds: Int64
        var start: ContinuousClock.Instant
    }

    /// Removes and returns the retry that is due soonest, if its time has come.
    static func takeDue(from waiting: inout [PendingTarget], now: Int64) -> PendingTarget? {
        guard let soonest = waiting.indices.min(by: { waiting[$0].dueMilliseconds < waiting[$1].dueMilliseconds }),
              waiting[soonest].dueMilliseconds <= now else { return nil }
        return waiting.remove(at: soonest)
    }

    enum AttemptResult {
        case finished(TargetResult)
        /// Send it again at this time (milliseconds since 1970).
        case retry(dueMilliseconds: Int64)
    }

    /// Sends `notification` once (its `attempt`-th time) and says whether it is finished or when
    /// to try again, as the retry policy decides.
    private func attempt(_ notification: APNsNotification, attempt: Int, client: APNsClient, expiresAtSeconds: Int64?,
                         generator: inout SystemRandomNumberGenerator) async -> AttemptResult {
        let outcome = await client.send(notification)
        var failure = Herald_V1_OutcomeBatch.Failure()
        failure.attempts = UInt32(attempt)
        switch outcome {
        case .accepted:
            return .finished(.accepted)
        case .rejected(let reason, let status, let unregisteredAt) where Self.isFinal(reason):
            failure.status = .rejected
            failure.reason = reason.description
            failure.httpStatus = UInt32(status)
            failure.unregisteredAtMs = unregisteredAt ?? 0
            return .finished(.failed(failure))
        case .failed(.invalid):
            failure.status = .rejected
            failure.reason = notification.problem ?? "invalid notification"
            return .finished(.failed(failure))
        default:
            let current = now()
            let decision = retryPolicy.decision(
                afterAttempt: attempt, nowMilliseconds: current, expirationMilliseconds: expiresAtSeconds.map { $0 * 1000 },
                unit: Double.random(in: 0..<1, using: &generator))
            switch decision {
            case .retry(let milliseconds):
                return .retry(dueMilliseconds: current + Int64(milliseconds))
            case .expired:
                failure.status = .expired
                failure.reason = "Expired"
                return .finished(.failed(failure))
            case .giveUp:
                failure.status = .rejected
                (failure.reason, failure.httpStatus) = Self.describe(outcome)
                return .finished(.failed(failure))
            }
        }
    }

    /// Whether sending again cannot help: a permanent reason, or a credential APNs refuses
    /// (only an expired token or one updated too often heals with time).
    static func isFinal(_ reason: APNsReason) -> Bool {
        switch reason.disposition {
        case .permanent: true
        case .retryable: false
        case .credential: reason != .expiredProviderToken && reason != .tooManyProviderTokenUpdates
        }
    }

    static func describe(_ outcome: APNsOutcome) -> (String, UInt32) {
        switch outcome {
        case .accepted: ("", 200)
        case .rejected(let reason, let status, _): (reason.description, UInt32(status))
        case .failed(let failure): ("\(failure)", 0)
        }
    }

    /// The collapse id Herald sets when the push has none: derived from the push id, so every
    /// copy of one push's notification on a device replaces the previous one.
    static func collapseID(pushID: UUID) -> String { "herald-" + pushID.uuidString.lowercased() }
}

extension APNsPushType {
    init(_ recordType: Herald_V1_JobBatch.PushType) {
        switch recordType {
        case .background: self = .background
        case .voip: self = .voip
        case .complication: self = .complication
        case .fileprovider: self = .fileprovider
        case .mdm: self = .mdm
        case .liveactivity: self = .liveactivity
        case .location: self = .location
        case .pushtotalk: self = .pushtotalk
        case .widgets: self = .widgets
        case .controls: self = .controls
        default: self = .alert
        }
    }
}

extension Data {
    /// Lower-case hex, as APNs paths carry tokens.
    var hexString: String {
        let digits = Array("0123456789abcdef".utf8)
        return String(unsafeUninitializedCapacity: count * 2) { buffer in
            for (index, byte) in enumerated() {
                buffer[index * 2] = digits[Int(byte >> 4)]
                buffer[index * 2 + 1] = digits[Int(byte & 0x0F)]
            }
            return count * 2
        }
    }
}

/// Hands out target indexes to a batch's sending tasks.
final class TargetCursor: Sendable {
    private let position = Atomic<Int>(0)
    func take() -> Int { position.add(1, ordering: .relaxed).oldValue }
}
