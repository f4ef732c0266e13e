import Foundation
import HeraldAPNsVocabulary
import HeraldDomain
import HeraldStore
import Logging
import PostgresNIO

/// Plays herald-center's part for one push, through the repositories herald-center itself uses
/// (`FanoutClaimRepository`, `FanoutProgressRepository`, `OutcomeLedger`): claims the push, records one batch holding `deviceIDs`, finishes the
/// fan-out and applies the batch's outcome — `failures` for the devices they name, accepted for
/// the rest. For tests of what an API caller or a sender sees after accounting, without running
/// a center and a broker.
/// - Returns: what the accounting changed.
@discardableResult
public func accountAsCenter(
    pushID: UUID, deviceIDs: [Int64], failures: [BatchOutcome.Failure] = [], environment: APNsEnvironment = .production,
    topic: String = "", client: PostgresClient, logger: Logger
) async throws -> AppliedOutcomes {
    let claims = FanoutClaimRepository(client: client, logger: logger)
    let progress = FanoutProgressRepository(client: client, logger: logger)
    let ledger = OutcomeLedger(client: client, logger: logger)
    let center = "test-center-\(UUID().uuidString.prefix(8))"
    guard try await claims.claim([pushID], by: center, lease: .seconds(60)).count == 1 else {
        throw TestAccountingError("push \(pushID) could not be claimed (not accepted, or another center holds it)")
    }
    let sorted = deviceIDs.sorted()
    let batch = RecordedBatch(
        pushID: pushID, sequence: 0, firstDevice: sorted.first ?? 0, lastDevice: sorted.last ?? 0,
        targetCount: sorted.count, environment: environment, topic: topic)
    guard
        case .recorded = try await progress.recordPage(
            pushID: pushID, by: center, cursor: batch.lastDevice, batches: [batch])
    else { throw TestAccountingError("push \(pushID): the batch was not recorded") }
    guard try await progress.finishFanout(pushID: pushID, by: center) else {
        throw TestAccountingError("push \(pushID): the fan-out could not be finished")
    }
    let failed = Set(failures.map(\.deviceID))
    return try await ledger.applyOutcomes([
        BatchOutcome(
            pushID: pushID, sequence: 0, acceptedDeviceIDs: sorted.filter { !failed.contains($0) }, failures: failures)
    ])
}

/// A device set up as invalid, as though APNs had rejected its token with `reason` earlier. A
/// fixture only: Herald itself invalidates tokens through `OutcomeLedger.applyOutcomes`
/// (see ``accountAsCenter(pushID:deviceIDs:failures:environment:topic:client:logger:)``).
public func markInvalid(_ deviceIDs: [Int64], reason: String, client: PostgresClient, logger: Logger) async throws {
    try await client.query(
        """
        UPDATE devices SET status = 'invalid', invalidated_at = now(), invalid_reason = \(reason), updated_at = now()
        WHERE id = ANY(\(deviceIDs))
        """, logger: logger)
}

/// Why ``accountAsCenter(pushID:deviceIDs:failures:environment:topic:client:logger:)`` could not play its part.
public struct TestAccountingError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
