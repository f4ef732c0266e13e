import Foundation
import HeraldDomain
import HeraldTiming
import Logging
import PostgresNIO

/// The transactional outbox: Kafka records written with the change they announce, published by
/// a relay afterwards.
public struct OutboxRepository: Sendable {
    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Appends a record inside the caller's transaction.
    static func append(_ record: PushRepository.OutboxDraft, on connection: PostgresConnection, logger: Logger)
        async throws
    {
        try await connection.run(
            """
            INSERT INTO outbox (topic, record_key, record_value, traceparent)
            VALUES (\(record.topic), \(record.key?.bytea), \(record.value.bytea), \(record.traceparent))
            """, logger: logger)
    }

    /// Appends a record on its own.
    public func append(_ record: PushRepository.OutboxDraft) async throws {
        try await client.boundedConnection { connection in
            try await Self.append(record, on: connection, logger: logger)
        }
    }

    /// The channel a statement adding outbox records notifies when its transaction commits
    /// (migration 0037).
    public static let notificationChannel = "herald_outbox"

    /// Calls `listening` once the connection listens, then `added` at every commit that added
    /// outbox records, until the task is cancelled or the listening connection fails (it throws
    /// then). Holds one of the pool's connections while it listens; gives up with
    /// ``DeadlineExceeded`` when it has not listened within ``HeraldDatabase/answerWithin``.
    public func listenForAddedRecords(
        listening: @escaping @Sendable () -> Void, added: @escaping @Sendable () -> Void
    ) async throws {
        try await withStartDeadline(HeraldDatabase.answerWithin) { started in
            try await client.withConnection { connection in
                try await connection.listen(on: Self.notificationChannel) { notifications in
                    guard started() else { return }
                    listening()
                    for try await _ in notifications { added() }
                }
            }
        }
    }

    /// Deletes up to `limit` records published more than `retention` ago, oldest first: what the
    /// relay keeps for diagnosis is bounded by time, not by the number of pushes ever sent.
    /// - Returns: how many were deleted.
    @discardableResult
    public func deletePublished(olderThan retention: Duration, limit: Int) async throws -> Int {
        let rows = try await client.boundedQuery(
            """
            WITH gone AS (
                DELETE FROM outbox WHERE id IN (
                    SELECT id FROM outbox
                    WHERE published_at < now() - \(retention.wholeMilliseconds) * interval '1 millisecond'
                    ORDER BY id LIMIT \(limit))
                RETURNING 1)
            SELECT count(*) FROM gone
            """, logger: logger)
        var deleted = 0
        for try await count in rows.decode(Int64.self) { deleted = Int(count) }
        return deleted
    }

    /// Publishes the oldest unpublished records: locks up to `limit` of them (other relays skip
    /// locked rows), hands them to `publish`, and marks them published when it returns. If
    /// `publish` throws, they stay unpublished for the next attempt.
    /// - Returns: how many records were published.
    @discardableResult
    public func publishBatch(limit: Int, _ publish: @escaping @Sendable ([OutboxRecord]) async throws -> Void)
        async throws -> Int
    {
        try await client.transaction(logger: logger) { connection in
            let rows = try await connection.run(
                """
                SELECT id, topic, record_key, record_value, traceparent FROM outbox
                WHERE published_at IS NULL ORDER BY id LIMIT \(limit) FOR UPDATE SKIP LOCKED
                """, logger: logger)
            var records: [OutboxRecord] = []
            for try await (id, topic, key, value, traceparent) in rows.decode(
                (Int64, String, ByteBuffer?, ByteBuffer, String?).self)
            {
                records.append(
                    OutboxRecord(id: id, topic: topic, key: key?.bytes, value: value.bytes, traceparent: traceparent))
            }
            guard !records.isEmpty else { return 0 }
            try await publish(records)
            try await connection.run(
                "UPDATE outbox SET published_at = now() WHERE id = ANY(\(records.map(\.id)))", logger: logger)
            return records.count
        }
    }
}
