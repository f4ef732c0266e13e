import Synchronization

/// Waits for the delivery reports of a group of records.
///
/// One group per ``KafkaProducer/send(_:)`` call, shared by all its records: librdkafka is
/// handed a retained pointer to the group as each record's opaque, and the delivery-report
/// callback releases it. So a batch of records costs one allocation, not one per record.
final class KafkaDeliveryGroup: Sendable {
    private struct State {
        var remaining: Int
        var lastReport: KafkaDeliveryReport?
        var firstError: KafkaError?
        var continuation: CheckedContinuation<KafkaDeliveryReport, Error>?
    }

    private let state: Mutex<State>

    init(count: Int) {
        state = Mutex(State(remaining: count))
    }

    func delivered(_ report: KafkaDeliveryReport) {
        finish { $0.lastReport = report }
    }

    func failed(_ error: KafkaError) {
        finish { state in
            if state.firstError == nil { state.firstError = error }
        }
    }

    /// Counts `count` records as failed without a report (they were never enqueued).
    func failed(_ error: KafkaError, count: Int) {
        for _ in 0..<count { failed(error) }
    }

    private func finish(_ update: (inout State) -> Void) {
        let resume: (CheckedContinuation<KafkaDeliveryReport, Error>, Result<KafkaDeliveryReport, Error>)? =
            state.withLock { state in
                update(&state)
                state.remaining -= 1
                guard state.remaining == 0, let continuation = state.continuation else { return nil }
                state.continuation = nil
                return (continuation, Self.result(state))
            }
        if let (continuation, result) = resume {
            continuation.resume(with: result)
        }
    }

    /// Returns when every record of the group has a report.
    /// - Returns: the report of the last record acknowledged.
    /// - Throws: the first failure among the records.
    func wait() async throws -> KafkaDeliveryReport {
        try await withCheckedThrowingContinuation { continuation in
            let result: Result<KafkaDeliveryReport, Error>? = state.withLock { state in
                if state.remaining == 0 { return Self.result(state) }
                state.continuation = continuation
                return nil
            }
            if let result { continuation.resume(with: result) }
        }
    }

    private static func result(_ state: State) -> Result<KafkaDeliveryReport, Error> {
        if let error = state.firstError { return .failure(error) }
        return .success(state.lastReport ?? KafkaDeliveryReport(partition: -1, offset: -1))
    }
}
