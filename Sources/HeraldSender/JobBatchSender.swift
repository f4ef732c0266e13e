import Foundation
import HeraldAPNs
import HeraldAPNsVocabulary
import HeraldDomain
import HeraldRecords
import HeraldStore
import HeraldTiming
import Logging
import NIOCore

/// Sends every target of one job batch through an ``APNsClient`` and returns the batch's
/// outcome record: each target ends accepted, rejected (with APNs' reason, status and the 410
/// timestamp) or expired — exactly one of them.
///
/// Retryable answers (429, 500, 503, timeouts, lost connections) are sent again with the
/// ``RetryPolicy``'s back-off, never past the batch's expiration. The `apns-id` of each
/// notification is derived from the push and the device, and its `apns-collapse-id` is the one
/// the push was given when it was accepted (the record carries it), so a batch delivered twice
/// replaces rather than stacks on the phone.
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

    public init(
        retryPolicy: RetryPolicy = .init(), metrics: SenderMetrics? = nil,
        now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) }
    ) {
        self.retryPolicy = retryPolicy
        self.metrics = metrics
        self.now = now
    }

    /// Sends the batch `record` holds (read from its job record with
    /// ``PackedJobBatch/decodeRecord(_:)``) and returns its outcomes.
    ///
    /// Every target gets its first attempt at once (through ``APNsClient/send(_:urgent:)``,
    /// as many in flight as the client allows); those APNs asks to retry are sent again in
    /// rounds, each when the earliest back-off among them is over, with every retry then due.
    ///
    /// - Parameters:
    ///   - urgent: a transactional push's batch: its notifications take the client's next free
    ///     streams before any campaign's.
    ///   - skipping: devices not to send to now (those reached over their long connection, or
    ///     sent in another call): the outcome holds every other target of the batch.
    ///   - countsBatch: whether this call finishes the batch in the metrics (the second call of a
    ///     split batch does not count it again).
    /// - Throws: `CancellationError` only: the task was cancelled while targets still waited to
    ///   be retried. Nothing of the batch should be published then; it comes again.
    public func send(
        _ record: PackedJobBatch, with client: APNsClient, urgent: Bool = false, skipping: Set<Int64> = [],
        countsBatch: Bool = true
    ) async throws
        -> Herald_V1_OutcomeBatch
    {
        let batch = record.header
        let targets = record.targets
        let notifications = JobBatchNotifications(record)
        let expiration = notifications.shared.expiration
        let included =
            skipping.isEmpty
            ? Array(0..<targets.count) : (0..<targets.count).filter { !skipping.contains(targets.deviceIDs[$0]) }

        var results = [TargetResult?](repeating: nil, count: targets.count)
        var unsendable = 0
        // A templated push's payloads are rendered per device (the record carries each distinct
        // one once); an empty one rendered over the limit and is never sent.
        if !batch.payloads.isEmpty {
            for index in included where notifications.payload(at: index).readableBytes == 0 {
                var failure = Herald_V1_OutcomeBatch.Failure()
                failure.status = .rejected
                failure.reason = BatchOutcome.Failure.renderedPayloadTooLargeReason
                results[index] = .failed(failure)
                unsendable += 1
            }
        }
        var attempts = [Int](repeating: 0, count: targets.count)
        // Milliseconds from the batch's first attempt to each target's final answer.
        var latencies = [Double](repeating: 0, count: targets.count)
        var waiting: [(index: Int, dueMilliseconds: Int64)] = []
        var retries: [String: Int] = [:]
        var round = unsendable == 0 ? included : included.filter { results[$0] == nil }
        let start = ContinuousClock.now
        var generator = SystemRandomNumberGenerator()
        while true {
            if round.isEmpty && waiting.isEmpty { break }
            let roundStart = (ContinuousClock.now - start).fractionalMilliseconds
            let sent = await client.send(notifications.subset(round), urgent: urgent)
            let current = now()
            for (position, index) in round.enumerated() {
                attempts[index] += 1
                switch decide(
                    sent.outcomes[position], problem: { notifications.problem(at: index) }, attempt: attempts[index],
                    now: current,
                    expiresAtSeconds: expiration, generator: &generator)
                {
                case .finished(let result):
                    results[index] = result
                    latencies[index] = roundStart + sent.latencies[position]
                case .retry(let due):
                    waiting.append((index, due))
                    retries[Self.retryCause(sent.outcomes[position]), default: 0] += 1
                }
            }
            guard let earliest = waiting.map(\.dueMilliseconds).min() else { break }
            if Task.isCancelled { throw CancellationError() }
            let wait = earliest - now()
            if wait > 0 { try await Task.sleep(for: .milliseconds(wait)) }
            let due = now()
            round = waiting.filter { $0.dueMilliseconds <= due }.map(\.index)
            waiting.removeAll { $0.dueMilliseconds <= due }
        }

        var outcomes = Herald_V1_OutcomeBatch(of: batch)
        for index in 0..<targets.count {
            let deviceID = UInt64(bitPattern: targets.deviceIDs[index])
            switch results[index] {
            case .accepted?:
                outcomes.acceptedDeviceIds.append(deviceID)
            case .failed(var failure)?:
                failure.deviceID = deviceID
                outcomes.failures.append(failure)
                logger.debug(
                    "notification not delivered",
                    metadata: [
                        "push": "\(notifications.pushID)", "device": "\(deviceID)",
                        "apns-id": "\(notifications.notification(at: index).apnsID ?? "")",
                        "token": "\(notifications.notification(at: index).deviceToken.prefix(8))…",
                        "outcome": "\(Self.statusName(failure.status))", "reason": "\(failure.reason)",
                        "attempts": "\(failure.attempts)",
                    ])
            case nil:
                precondition(skipping.contains(Int64(bitPattern: deviceID)), "every target sent ends with an outcome")
            }
        }
        outcomes.acceptedDeviceIds.sort()
        outcomes.failures.sort { $0.deviceID < $1.deviceID }
        outcomes.completedAtMs = now()
        metrics?.record(
            accepted: outcomes.acceptedDeviceIds.count,
            failures: outcomes.failures.map { (Self.statusName($0.status), $0.reason) },
            attempts: attempts.reduce(0, +),
            latencies: skipping.isEmpty ? latencies : included.map { latencies[$0] }, retries: retries,
            countsBatch: countsBatch)
        return outcomes
    }

    /// The cause of an answer tried again, as a bounded label: the HTTP status APNs answered, or
    /// the kind of transport failure.
    static func retryCause(_ outcome: APNsOutcome) -> String {
        switch outcome {
        case .accepted: "accepted"
        case .rejected(_, let status, _): "\(status)"
        case .failed(let failure):
            switch failure {
            case .timeout: "timeout"
            case .connectionLost: "connection_lost"
            case .streamReset: "stream_reset"
            case .notProcessed: "not_processed"
            case .noConnection: "no_connection"
            case .clientStopped: "client_stopped"
            case .invalid: "invalid"
            }
        }
    }

    static func statusName(_ status: Herald_V1_OutcomeBatch.Status) -> String {
        switch status {
        case .rejected: "rejected"
        case .expired: "expired"
        case .canceled: "canceled"
        default: "unknown"
        }
    }

    enum TargetResult: Sendable {
        case accepted
        case failed(Herald_V1_OutcomeBatch.Failure)
    }

    enum AttemptResult {
        case finished(TargetResult)
        /// Send it again at this time (milliseconds since 1970).
        case retry(dueMilliseconds: Int64)
    }

    /// What the `attempt`-th sending of a notification ended with means: finished, or when to
    /// try again, as the retry policy decides. `problem` says what was wrong with one never sent.
    private func decide(
        _ outcome: APNsOutcome, problem: () -> String?, attempt: Int, now current: Int64,
        expiresAtSeconds: Int64?, generator: inout SystemRandomNumberGenerator
    ) -> AttemptResult {
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
            failure.reason = problem() ?? "invalid notification"
            return .finished(.failed(failure))
        default:
            let decision = retryPolicy.decision(
                afterAttempt: attempt, nowMilliseconds: current,
                expirationMilliseconds: expiresAtSeconds.map { $0 * 1000 },
                unit: Double.random(in: 0..<1, using: &generator))
            switch decision {
            case .retry(let delay):
                return .retry(dueMilliseconds: current + delay.wholeMilliseconds)
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
