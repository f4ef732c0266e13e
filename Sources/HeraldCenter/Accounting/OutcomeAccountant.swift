import Foundation
import HeraldCore
import HeraldDomain
import HeraldKafka
import HeraldMessaging
import HeraldRecords
import HeraldStore
import HeraldTiming
import Logging
import ServiceLifecycle

/// Counts outcomes: a consumer-group member on `herald.outcomes` that turns each pull of outcome
/// batches into one PostgreSQL transaction (``OutcomeLedger/applyOutcomes(_:)``: batch
/// completion, per-push counters, failed deliveries, token invalidation, completed pushes) and
/// only then stores the offsets. A center killed in between counts nothing twice: a batch's
/// outcome is counted once, when its batch row is completed.
public final class OutcomeAccountant: Service, Sendable {
    private let consumer: KafkaConsumer
    private let ledger: OutcomeLedger
    private let deadLetters: KafkaProducer
    private let metrics: CenterMetrics
    private let logger: Logger

    public init(
        consumer: KafkaConsumer, ledger: OutcomeLedger, deadLetters: KafkaProducer, metrics: CenterMetrics,
        logger: Logger
    ) {
        self.consumer = consumer
        self.ledger = ledger
        self.deadLetters = deadLetters
        self.metrics = metrics
        self.logger = logger
    }

    public func run() async throws {
        while let messages = try await consumer.nextMessages() {
            guard !messages.isEmpty else { continue }
            var outcomes: [BatchOutcome] = []
            outcomes.reserveCapacity(messages.count)
            var traces: [UUID: String] = [:]
            for message in messages {
                do {
                    let outcome = try Self.outcome(try Herald_V1_OutcomeBatch.decodeRecord(message.value))
                    if let trace = message.trace { traces[outcome.pushID] = trace.traceID }
                    outcomes.append(outcome)
                } catch {
                    // Stored past only once the dead letter is acknowledged (else the pull comes again).
                    try await deadLetters.deadLetterUntilAcknowledged(
                        message, reason: "\(error)", consumer: "herald-center", logger: logger)
                }
            }
            let applied = try await apply(outcomes)
            metrics.outcomeBatchesCounted.add(applied.batchesCounted, ordering: .relaxed)
            metrics.outcomeBatchesIgnored.add(applied.batchesIgnored, ordering: .relaxed)
            metrics.notificationsCounted.add(applied.notificationsCounted, ordering: .relaxed)
            metrics.tokensInvalidated.add(applied.tokensInvalidated, ordering: .relaxed)
            metrics.pushesCompleted.add(applied.pushesCompleted.count, ordering: .relaxed)
            for push in applied.pushesCompleted {
                logger.info("push completed", metadata: ["push": "\(push)", "trace": "\(traces[push] ?? "-")"])
            }
            for message in messages {
                // A partition reassigned meanwhile: its new owner reads these again and counts
                // nothing twice.
                try? consumer.storeOffset(for: message)
            }
        }
    }

    /// Applies until PostgreSQL takes it (an outage holds the pull, and with it the offsets). An
    /// attempt without an answer within the store's deadline is given up and made again:
    /// counting is idempotent (a batch counts only when its row is completed), so an attempt that
    /// did commit late counts nothing twice.
    /// - Throws: `CancellationError` when stopped meanwhile (the offsets stay unstored).
    private func apply(_ outcomes: [BatchOutcome]) async throws -> AppliedOutcomes {
        var waits = Backoff.outage.delays()
        while true {
            do {
                return try await ledger.applyOutcomes(outcomes)
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                let delay = waits.next()
                logger.warning(
                    "cannot count outcomes; retrying",
                    metadata: ["error": "\(HeraldDatabase.describe(error))", "retry-in": "\(delay)"])
                try await Task.sleep(for: delay)
            }
        }
    }

    /// The outcome a record reports, checked: a record that cannot be applied as it is (a batch
    /// id of another push or out of range, ids that are no device's) is refused with the reason.
    static func outcome(_ record: Herald_V1_OutcomeBatch) throws(RecordDecodingError) -> BatchOutcome {
        guard record.pushID.count == 16 else {
            throw .unusable(Herald_V1_OutcomeBatch.self, "the push id is \(record.pushID.count) bytes, not 16")
        }
        guard record.batchID.count == 20, record.batchID.prefix(16) == record.pushID else {
            throw .unusable(
                Herald_V1_OutcomeBatch.self, "the batch id is not its push id followed by a 4-byte sequence")
        }
        let sequence = record.batchID.suffix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        guard let checkedSequence = Int32(exactly: sequence) else {
            throw .unusable(
                Herald_V1_OutcomeBatch.self, "batch sequence \(sequence) is out of range (at most \(Int32.max))")
        }
        let devices =
            record.acceptedDeviceIds + record.deliveredOnlineDeviceIds + record.offlineDeviceIds
            + record.failures.map(\.deviceID)
        if let wrong = devices.first(where: { $0 == 0 || $0 > UInt64(Int64.max) }) {
            throw .unusable(Herald_V1_OutcomeBatch.self, "device id \(wrong) is out of range")
        }
        if let unknown = record.failures.first(where: { Self.status($0.status) == nil }) {
            throw .unusable(
                Herald_V1_OutcomeBatch.self,
                "failure status \(unknown.status.rawValue) of device \(unknown.deviceID) is unknown")
        }
        return BatchOutcome(
            pushID: UUID(data: record.pushID), sequence: Int(checkedSequence),
            acceptedDeviceIDs: record.acceptedDeviceIds.map { Int64(bitPattern: $0) },
            deliveredOnlineDeviceIDs: record.deliveredOnlineDeviceIds.map { Int64(bitPattern: $0) },
            offlineDeviceIDs: record.offlineDeviceIds.map { Int64(bitPattern: $0) },
            failures: record.failures.map { failure in
                BatchOutcome.Failure(
                    deviceID: Int64(bitPattern: failure.deviceID), status: Self.status(failure.status) ?? .rejected,
                    reason: failure.reason,
                    httpStatus: Int(failure.httpStatus),
                    unregisteredAt: failure.unregisteredAtMs > 0
                        ? Date(timeIntervalSince1970: Double(failure.unregisteredAtMs) / 1000) : nil,
                    attempts: Int(failure.attempts))
            })
    }

    static func status(_ status: Herald_V1_OutcomeBatch.Status) -> FailedDelivery.Status? {
        switch status {
        case .rejected: .rejected
        case .expired: .expired
        case .canceled: .canceled
        default: nil
        }
    }
}
