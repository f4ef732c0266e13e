import Foundation
import HeraldCore
import HeraldDomain
import HeraldRecords
import HeraldTiming
import Logging
import PostgresNIO

/// Pushes, their counters, the batches they were cut into and their failed deliveries.
public struct PushRepository: Sendable {
    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// A record to publish to Kafka with the push, through the outbox.
    public struct OutboxDraft: Sendable {
        public var topic: String
        public var key: [UInt8]?
        public var value: [UInt8]
        /// Published as the record's `traceparent` header.
        public var traceparent: String?

        public init(topic: String, key: [UInt8]?, value: [UInt8], traceparent: String? = nil) {
            self.topic = topic
            self.key = key
            self.value = value
            self.traceparent = traceparent
        }

        /// The announcement of a push event (created, canceled, ...) on the pushes topic, keyed by
        /// the push id so one push's events stay in order.
        public static func pushEvent(
            _ kind: Herald_V1_PushEvent.Kind, pushID: UUID, appID: UUID, topic: String, traceparent: String? = nil
        ) throws -> OutboxDraft {
            OutboxDraft(
                topic: topic, key: Array(pushID.recordBytes),
                value: try Herald_V1_PushEvent(kind: kind, pushID: pushID, appID: appID).encodedRecord(),
                traceparent: traceparent)
        }
    }

    /// Stores a push, its zeroed counters and its announcement (an outbox record) atomically:
    /// one prepared statement, one round trip, whose data-modifying parts PostgreSQL applies
    /// together or not at all.
    ///
    /// With an idempotency key the app already used, nothing is written and the first push is
    /// returned instead.
    /// - Returns: the stored push and whether this call created it.
    public func create(_ push: NewPush, announcement: OutboxDraft) async throws -> (push: Push, created: Bool) {
        try await answer(push, createdAt: try await insert(push, announcement: announcement))
    }

    /// Stores `recall` (a push with ``NewPush/recallOf`` and no idempotency key), or answers the
    /// recall stored before for the same push: one recall per push, held by the unique index
    /// `pushes_one_recall_per_push`, not by a key in the tenant's namespace.
    public func createRecall(_ recall: NewPush, announcement: OutboxDraft) async throws -> (push: Push, created: Bool) {
        guard let original = recall.recallOf, recall.idempotencyKey == nil else {
            throw StoreError(message: "push \(recall.id) is not a recall without an idempotency key")
        }
        do {
            return try await answer(recall, createdAt: try await insert(recall, announcement: announcement))
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23505" {
            guard let existing = try await self.recall(of: original, appID: recall.appID) else { throw error }
            return (existing, false)
        }
    }

    /// What creating `push` answers once its statement ran: the push as stored when it was
    /// (`createdAt`), else the first push with its idempotency key.
    func answer(_ push: NewPush, createdAt: Date?) async throws -> (push: Push, created: Bool) {
        if let createdAt {
            return (
                Push(
                    definition: push, fanoutCursor: 0, batchesEmitted: 0, createdAt: createdAt, completedAt: nil,
                    canceledAt: nil, createdByKey: push.origin?.actor.keyID), true
            )
        }
        guard let key = push.idempotencyKey, let first = try await self.push(idempotencyKey: key, appID: push.appID)
        else {
            throw StoreError(message: "push \(push.id) was neither stored nor found by its idempotency key")
        }
        return (first, false)
    }

    /// Stores `push`, its counters and `announcement` in one statement. Returns its creation
    /// time, or nil when the app already used its idempotency key (nothing is stored then).
    func insert(_ push: NewPush, announcement: OutboxDraft) async throws -> Date? {
        try await withDeadline(HeraldDatabase.answerWithin) { [client, logger] in
            let rows = try await client.execute(
                InsertPushWithAnnouncement(push: push, record: announcement), logger: logger)
            for try await createdAt in rows { return createdAt }
            return nil
        }
    }

    /// Stores several pushes with their counters and announcements in one statement. Returns
    /// the creation time of each push stored; a push whose idempotency key its app already used
    /// (before, or earlier in `entries`) is left out.
    func insert(_ entries: [PushWriter.Entry]) async throws -> [UUID: Date] {
        try await withDeadline(HeraldDatabase.answerWithin) { [client, logger] in
            let rows = try await client.execute(InsertPushesWithAnnouncements(entries: entries), logger: logger)
            var created: [UUID: Date] = [:]
            for try await (id, createdAt) in rows { created[id] = createdAt }
            return created
        }
    }

    /// The push `id` of `appID`.
    public func push(id: UUID, appID: UUID) async throws -> Push? {
        let rows = try await client.boundedQuery(
            """
            SELECT \(unescaped: Self.pushColumns) FROM pushes WHERE id = \(id) AND app_id = \(appID)
            """, logger: logger)
        return try await Self.pushes(from: rows).first
    }

    /// What a sender needs to know before sending batch `sequence` of `pushID` from the Kafka
    /// record `copy`, in one statement: whether the push was canceled (its remaining batches
    /// are dropped), whether the batch's outcome was already accounted, and whether another
    /// copy of it is being sent (a resumed fan-out produced it again while the first copy was on
    /// its way), or this very record is (handed to two senders by a rebalance). Unless another
    /// copy started less than `takeoverAfter` ago, the batch is noted as being sent from `copy`
    /// through this connection's session; the same record again is taken only once the session
    /// that took it is gone (its sender died), or past `takeoverAfter`. Behind a
    /// transaction-pooling PgBouncer a session outlives its sender, so a dead sender's record
    /// waits `takeoverAfter`. Nil when `appID` has no such push.
    /// - Throws: ``DeadlineExceeded`` without an answer within `answerWithin`.
    public func batchStatus(
        pushID: UUID, appID: UUID, sequence: Int32, copy: String, takeoverAfter: Duration,
        answerWithin: Duration = HeraldDatabase.answerWithin
    ) async throws -> BatchStatus? {
        let statement = BatchStatusStatement(
            pushID: pushID, appID: appID, sequence: sequence, copy: copy,
            takeoverAfterMilliseconds: takeoverAfter.wholeMilliseconds)
        return try await withDeadline(answerWithin) { [client, logger] in
            for try await (canceled, accounted, elsewhere, sameCopy) in try await client.execute(
                statement, logger: logger)
            {
                let elsewhere = elsewhere ?? false
                return BatchStatus(
                    canceled: canceled, accounted: accounted ?? false,
                    anotherCopySending: elsewhere && sameCopy != true, sameCopyInFlight: elsewhere && sameCopy == true)
            }
            return nil
        }
    }

    /// Notes again that batch `sequence` of `pushID` is being sent from the Kafka record `copy`, as
    /// of now: its sender still holds it (retrying through an APNs outage, or waiting for the
    /// broker to take its outcome), so a copy produced meanwhile — a re-drive, or this record
    /// handed to another sender — is not taken over while it does
    /// (``batchStatus(pushID:appID:sequence:copy:takeoverAfter:answerWithin:)``'s takeover time
    /// counts from here). Nothing changes once another copy was taken or the outcome is accounted.
    public func stillSending(pushID: UUID, sequence: Int32, copy: String, within: Duration) async throws {
        try await client.boundedQuery(
            """
            UPDATE push_batches SET sending_since = now()
            WHERE push_id = \(pushID) AND sequence = \(sequence) AND sending_copy = \(copy) AND completed_at IS NULL
            """, logger: logger, within: within)
    }

    /// See ``batchStatus(pushID:appID:sequence:copy:takeoverAfter:)``.
    public struct BatchStatus: Sendable, Equatable {
        public var canceled: Bool
        public var accounted: Bool
        public var anotherCopySending: Bool
        /// This very record is being sent by a sender whose database session lives (its
        /// partition moved to the asker while it held the batch): wait for its outcome.
        public var sameCopyInFlight: Bool

        public init(canceled: Bool, accounted: Bool, anotherCopySending: Bool, sameCopyInFlight: Bool = false) {
            self.canceled = canceled
            self.accounted = accounted
            self.anotherCopySending = anotherCopySending
            self.sameCopyInFlight = sameCopyInFlight
        }
    }

    /// The push `appID` created with `idempotencyKey`.
    public func push(idempotencyKey: String, appID: UUID) async throws -> Push? {
        let rows = try await client.boundedQuery(
            """
            SELECT \(unescaped: Self.pushColumns) FROM pushes WHERE app_id = \(appID) AND idempotency_key = \(idempotencyKey)
            """, logger: logger)
        return try await Self.pushes(from: rows).first
    }

    /// Cancels a push that is not finished (scheduled, accepted, fanning out or sending) and
    /// appends `outbox` records and `audit` in the same transaction. What was never sent is counted as
    /// canceled by herald-center; senders drop the push's remaining jobs.
    /// - Returns: whether the push was canceled by this call.
    @discardableResult
    public func cancel(id: UUID, appID: UUID, outbox: [OutboxDraft] = [], audit: AuditEntry? = nil) async throws
        -> Bool
    {
        try await client.transaction(logger: logger) { connection in
            let rows = try await connection.run(
                """
                UPDATE pushes SET state = 'canceled', canceled_at = now(), paused_at = NULL
                WHERE id = \(id) AND app_id = \(appID) AND state IN ('scheduled', 'accepted', 'fanning_out', 'sending')
                RETURNING id
                """, logger: logger)
            var canceled = false
            for try await _ in rows.decode(UUID.self) { canceled = true }
            guard canceled else { return false }
            for record in outbox { try await OutboxRepository.append(record, on: connection, logger: logger) }
            if let audit { try await connection.append(audit, logger: logger) }
            return true
        }
    }

    // MARK: Counters

    /// Adds `delta` to the push's counters (one row update for a whole batch of outcomes), on
    /// the connection of the accounting's transaction.
    static func addToCounters(pushID: UUID, _ delta: PushCounters, on connection: PostgresConnection, logger: Logger)
        async throws
    {
        let reasons = try String(decoding: JSONEncoder().encode(delta.rejectedByReason), as: UTF8.self)
        let skipped = try String(decoding: JSONEncoder().encode(delta.skippedByReason), as: UTF8.self)
        for try await _ in try await connection.execute(
            AddToCountersStatement(pushID: pushID, delta: delta, reasonsJSON: reasons, skippedJSON: skipped),
            logger: logger)
        {}
    }

    public func counters(pushID: UUID) async throws -> PushCounters? {
        let rows = try await client.boundedQuery(
            """
            SELECT \(unescaped: PushCounters.columns) FROM push_counters c WHERE push_id = \(pushID)
            """, logger: logger)
        for try await row in rows { return try PushCounters(row.makeRandomAccess(), from: 0) }
        return nil
    }

    /// An A/B test's counters by variant (migration 0035), in variant order; a variant nothing
    /// was cut for yet has no row.
    public func variantCounters(pushID: UUID) async throws -> [VariantCounters] {
        let rows = try await client.boundedQuery(
            """
            SELECT variant, targeted, accepted, delivered_online, rejected, expired, canceled, skipped
            FROM push_variant_counters WHERE push_id = \(pushID) ORDER BY variant
            """, logger: logger)
        var counters: [VariantCounters] = []
        for try await (variant, targeted, accepted, online, rejected, expired, canceled, skipped)
            in rows.decode((Int16, Int64, Int64, Int64, Int64, Int64, Int64, Int64).self)
        {
            var row = VariantCounters(variant: Int(variant))
            row.targeted = targeted
            row.accepted = accepted
            row.deliveredOnline = online
            row.rejected = rejected
            row.expired = expired
            row.canceled = canceled
            row.skipped = skipped
            counters.append(row)
        }
        return counters
    }

    // MARK: Helpers

    static let pushColumns = """
        id, app_id, state, audience::text, notification::text, options::text, payload, push_type, priority, \
        expires_at, collapse_id, idempotency_key, scheduled_at, throttle_per_second, finish_within_s, recall_of, \
        fanout_cursor, batches_emitted, created_at, completed_at, canceled_at, traceparent, created_by_key, template, \
        priority_class, schedule_id, occurrence_at, timing::text, wave, waves, split::text, variant_payloads
        """
    /// How many columns ``pushColumns`` names: a query's own columns come after them.
    static let pushColumnCount = 32

    static func pushes(from rows: ReadRows) async throws -> [Push] {
        var pushes: [Push] = []
        for try await row in rows { pushes.append(try push(from: row)) }
        return pushes
    }

    /// The push in the first columns of `row`, selected as ``pushColumns``.
    static func push(from row: PostgresRow) throws -> Push {
        let (
            id, appID, state, audience, notification, options, payload, pushType, priority, expiresAt,
            collapseID, idempotencyKey, scheduledAt, throttle, finishWithin, recallOf, cursor, batches,
            createdAt, completedAt, canceledAt, traceparent, createdByKey, template, priorityClass, scheduleID,
            occurrenceAt, timing, wave, waves, split, variantPayloads
        ) = try row.decode(
            (
                UUID, UUID, String, String, String, String, ByteBuffer, String, Int16, Date?, String,
                String?, Date?, Int32?, Int32?, UUID?, Int64, Int32, Date, Date?, Date?, String?, UUID?, ByteBuffer?,
                String, UUID?, Date?, String?, Int32, Int32?, String?, [ByteBuffer]?
            ).self)
        var definition = NewPush(
            id: id, appID: appID, state: PushState(rawValue: state) ?? .accepted, audienceJSON: audience,
            notificationJSON: notification, optionsJSON: options, payload: payload.bytes, template: template?.bytes,
            pushType: pushType,
            priority: Int(priority), priorityClass: PushPriorityClass(rawValue: priorityClass) ?? .campaign,
            expiresAt: expiresAt, collapseID: collapseID, idempotencyKey: idempotencyKey,
            scheduledAt: scheduledAt, throttlePerSecond: throttle.map(Int.init),
            finishWithinSeconds: finishWithin.map(Int.init), recallOf: recallOf, timing: PushTiming(json: timing),
            traceparent: traceparent)
        definition.split = PushSplit(json: split)
        definition.variantPayloads = variantPayloads?.map(\.bytes) ?? []
        return Push(
            definition: definition, fanoutCursor: cursor, batchesEmitted: Int(batches),
            createdAt: createdAt, completedAt: completedAt, canceledAt: canceledAt, createdByKey: createdByKey,
            scheduleID: scheduleID, occurrenceAt: occurrenceAt, wave: Int(wave), waves: waves.map(Int.init))
    }
}

/// The write of a push, its counters and its announcement, as one prepared statement (planned
/// once per connection: this is the Open API's hottest write).
struct InsertPushWithAnnouncement: PostgresPreparedStatement {
    typealias Row = Date
    static let sql = """
        WITH inserted AS (
            INSERT INTO pushes (id, app_id, state, audience, notification, options, payload, push_type, priority,
                                expires_at, collapse_id, idempotency_key, scheduled_at, throttle_per_second,
                                finish_within_s, recall_of, traceparent, created_by_key, template, priority_class,
                                timing, split, variant_payloads)
            VALUES ($1, $2, $3, $4::jsonb, $5::jsonb, $6::jsonb, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $20,
                    $21, $25, $26, $27::text::jsonb, $28::text::jsonb, $29::bytea[])
            ON CONFLICT (app_id, idempotency_key) DO NOTHING
            RETURNING id, created_at
        ), counters AS (
            INSERT INTO push_counters (push_id) SELECT id FROM inserted
        ), announced AS (
            INSERT INTO outbox (topic, record_key, record_value, traceparent) SELECT $17, $18, $19, $20 FROM inserted
        ), audited AS (
            INSERT INTO audit_events (app_id, actor, key_id, action, target, request_id, source_address, details)
            SELECT $2, $22, $21,
                   CASE WHEN $16::uuid IS NULL THEN 'push.created' ELSE 'push.recalled' END,
                   COALESCE($16::uuid, $1)::text, $23, $24, jsonb_build_object('push', $1::text)
            FROM inserted WHERE $22::text IS NOT NULL
        )
        SELECT created_at FROM inserted
        """

    let push: NewPush
    let record: PushRepository.OutboxDraft

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 29)
        bindings.append(push.id)
        bindings.append(push.appID)
        bindings.append(push.state.rawValue)
        bindings.append(push.audienceJSON)
        bindings.append(push.notificationJSON)
        bindings.append(push.optionsJSON)
        bindings.append(ByteBuffer(bytes: push.payload))
        bindings.append(push.pushType)
        bindings.append(Int16(push.priority))
        bindings.append(push.expiresAt)
        bindings.append(push.collapseID)
        bindings.append(push.idempotencyKey)
        bindings.append(push.scheduledAt)
        bindings.append(push.throttlePerSecond.map(Int32.init))
        bindings.append(push.finishWithinSeconds.map(Int32.init))
        bindings.append(push.recallOf)
        bindings.append(record.topic)
        bindings.append(record.key.map { ByteBuffer(bytes: $0) })
        bindings.append(ByteBuffer(bytes: record.value))
        bindings.append(push.traceparent)
        bindings.append(push.origin?.actor.keyID)
        bindings.append(push.origin.map { AuditRepository.actorName($0.actor) })
        bindings.append(push.origin?.requestID)
        bindings.append(push.origin?.sourceAddress)
        bindings.append(push.template.map { ByteBuffer(bytes: $0) })
        bindings.append(push.priorityClass.rawValue)
        // Bound as text and cast: a NULL first on a connection must not leave the prepared
        // statement expecting jsonb's binary form for every later value.
        bindings.append(push.timing.map(\.json))
        bindings.append(push.split?.json)
        // Empty for a push without variants: stored as NULL.
        bindings.append(push.variantPayloads.isEmpty ? nil : push.variantPayloads.map { ByteBuffer(bytes: $0) })
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Date {
        try row.decode(Date.self)
    }
}

/// ``PushRepository/addToCounters(pushID:_:on:logger:)``'s statement, prepared (every outcome
/// transaction runs it, once per push it counts).
struct AddToCountersStatement: PostgresPreparedStatement {
    typealias Row = Void
    static let sql = """
        UPDATE push_counters SET
            targeted = targeted + $2,
            accepted = accepted + $3,
            rejected = rejected + $4,
            expired = expired + $5,
            canceled = canceled + $6,
            tokens_invalidated = tokens_invalidated + $7,
            delivered_online = delivered_online + $9,
            skipped = skipped + $10,
            skipped_by_reason = herald_add_counts(skipped_by_reason, $11::text::jsonb),
            rejected_by_reason = (
                SELECT COALESCE(jsonb_object_agg(key, total), '{}'::jsonb) FROM (
                    SELECT key, sum(value::bigint) AS total FROM (
                        SELECT key, value FROM jsonb_each_text(rejected_by_reason)
                        UNION ALL SELECT key, value FROM jsonb_each_text($8::text::jsonb)
                    ) AS both_sides GROUP BY key
                ) AS summed
            ),
            updated_at = now()
        WHERE push_id = $1
        """

    let pushID: UUID
    let delta: PushCounters
    /// The rejections by reason as a JSON object (bound as text and cast, as jsonb's binary form
    /// is not what postgres-nio sends for a String).
    let reasonsJSON: String
    /// The skips by reason, likewise (an online-only push's `offline` devices).
    let skippedJSON: String

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 11)
        bindings.append(pushID)
        bindings.append(delta.targeted)
        bindings.append(delta.accepted)
        bindings.append(delta.rejected)
        bindings.append(delta.expired)
        bindings.append(delta.canceled)
        bindings.append(delta.tokensInvalidated)
        bindings.append(reasonsJSON)
        bindings.append(delta.deliveredOnline)
        bindings.append(delta.skipped)
        bindings.append(skippedJSON)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws {}
}

/// ``PushRepository/batchStatus(pushID:appID:sequence:copy:takeoverAfter:answerWithin:)`` as a
/// prepared statement: every sender asks it once per job batch, and parsing and planning it each
/// time was half of what PostgreSQL spent on it (`make bench-e2e`, perf, 2026-11-26).
struct BatchStatusStatement: PostgresPreparedStatement {
    typealias Row = (Bool, Bool?, Bool?, Bool?)
    /// A copy is taken (noted as the one being sent, through this session) when none is, when the
    /// one noted started longer ago than the takeover time, or when it is this very record and the
    /// session that took it is gone (its sender died). The outer SELECT reads the row as it was
    /// before the UPDATE: its last column says whether a copy not taken is this record.
    static let sql = """
        WITH push AS (
            SELECT state = 'canceled' AS canceled FROM pushes WHERE id = $1 AND app_id = $2
        ), taken AS (
            UPDATE push_batches SET sending_copy = $4, sending_since = now(), sending_session = pg_backend_pid()
            WHERE push_id = $1 AND sequence = $3 AND completed_at IS NULL AND EXISTS (SELECT 1 FROM push)
              AND (sending_copy IS NULL
                   OR sending_since < now() - $5::bigint * interval '1 millisecond'
                   OR sending_copy = $4
                      AND NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = push_batches.sending_session))
            RETURNING sequence
        )
        SELECT p.canceled, b.completed_at IS NOT NULL,
               b.sequence IS NOT NULL AND b.completed_at IS NULL AND NOT EXISTS (SELECT 1 FROM taken),
               b.sending_copy = $4
        FROM push p LEFT JOIN push_batches b ON b.push_id = $1 AND b.sequence = $3
        """

    let pushID: UUID
    let appID: UUID
    let sequence: Int32
    let copy: String
    let takeoverAfterMilliseconds: Int64

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 5)
        bindings.append(pushID)
        bindings.append(appID)
        bindings.append(sequence)
        bindings.append(copy)
        bindings.append(takeoverAfterMilliseconds)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        try row.decode(Row.self)
    }
}

/// ``InsertPushWithAnnouncement`` for many pushes at once: every column travels as an array and
/// `unnest` turns them back into rows. postgres-nio's arrays hold no NULL, so absent values
/// travel as a sentinel the statement turns into NULL: '' for text and ids, the epoch for
/// times, 0 for the throttle (which is at least 1 when present), an empty record key.
struct InsertPushesWithAnnouncements: PostgresPreparedStatement {
    typealias Row = (UUID, Date)
    static let sql = """
        WITH rows AS (
            SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bytea[],
                                 $8::text[], $9::int2[], $10::timestamptz[], $11::text[], $12::text[], $13::timestamptz[],
                                 $14::int4[], $15::int4[], $16::text[], $17::text[], $18::bytea[], $19::bytea[],
                                 $20::text[], $21::text[], $22::text[], $23::text[], $24::text[], $25::bytea[],
                                 $26::text[], $27::text[])
                AS r(id, app_id, state, audience, notification, options, payload, push_type, priority, expires_at,
                     collapse_id, idempotency_key, scheduled_at, throttle_per_second, finish_within_s, recall_of,
                     topic, record_key, record_value, traceparent, created_by_key, actor, request_id, source_address,
                     template, priority_class, timing)
        ), inserted AS (
            INSERT INTO pushes (id, app_id, state, audience, notification, options, payload, push_type, priority,
                                expires_at, collapse_id, idempotency_key, scheduled_at, throttle_per_second,
                                finish_within_s, recall_of, traceparent, created_by_key, template, priority_class,
                                timing)
            SELECT id, app_id, state, audience::jsonb, notification::jsonb, options::jsonb, payload, push_type, priority,
                   NULLIF(expires_at, 'epoch'), NULLIF(collapse_id, ''), NULLIF(idempotency_key, ''),
                   NULLIF(scheduled_at, 'epoch'), NULLIF(throttle_per_second, 0), NULLIF(finish_within_s, 0),
                   NULLIF(recall_of, '')::uuid, NULLIF(traceparent, ''), NULLIF(created_by_key, '')::uuid,
                   NULLIF(template, ''::bytea), priority_class, NULLIF(timing, '')::jsonb
            FROM rows
            ON CONFLICT (app_id, idempotency_key) DO NOTHING
            RETURNING id, created_at
        ), counters AS (
            INSERT INTO push_counters (push_id) SELECT id FROM inserted
        ), announced AS (
            INSERT INTO outbox (topic, record_key, record_value, traceparent)
            SELECT r.topic, NULLIF(r.record_key, ''::bytea), r.record_value, NULLIF(r.traceparent, '')
            FROM rows r JOIN inserted i ON i.id = r.id
        ), audited AS (
            INSERT INTO audit_events (app_id, actor, key_id, action, target, request_id, source_address, details)
            SELECT r.app_id, r.actor, NULLIF(r.created_by_key, '')::uuid,
                   CASE WHEN r.recall_of = '' THEN 'push.created' ELSE 'push.recalled' END,
                   CASE WHEN r.recall_of = '' THEN r.id::text ELSE r.recall_of END,
                   NULLIF(r.request_id, ''), NULLIF(r.source_address, ''), jsonb_build_object('push', r.id::text)
            FROM rows r JOIN inserted i ON i.id = r.id WHERE r.actor <> ''
        )
        SELECT id, created_at FROM inserted
        """

    let entries: [PushWriter.Entry]

    func makeBindings() throws -> PostgresBindings {
        let pushes = entries.map(\.push)
        let records = entries.map(\.announcement)
        let never = Date(timeIntervalSince1970: 0)
        var bindings = PostgresBindings(capacity: 29)
        bindings.append(pushes.map(\.id))
        bindings.append(pushes.map(\.appID))
        bindings.append(pushes.map(\.state.rawValue))
        bindings.append(pushes.map(\.audienceJSON))
        bindings.append(pushes.map(\.notificationJSON))
        bindings.append(pushes.map(\.optionsJSON))
        bindings.append(pushes.map { ByteBuffer(bytes: $0.payload) })
        bindings.append(pushes.map(\.pushType))
        bindings.append(pushes.map { Int16($0.priority) })
        bindings.append(pushes.map { $0.expiresAt ?? never })
        bindings.append(pushes.map(\.collapseID))
        bindings.append(pushes.map { $0.idempotencyKey ?? "" })
        bindings.append(pushes.map { $0.scheduledAt ?? never })
        bindings.append(pushes.map { Int32($0.throttlePerSecond ?? 0) })
        bindings.append(pushes.map { Int32($0.finishWithinSeconds ?? 0) })
        bindings.append(pushes.map { $0.recallOf?.uuidString ?? "" })
        bindings.append(records.map(\.topic))
        bindings.append(records.map { ByteBuffer(bytes: $0.key ?? []) })
        bindings.append(records.map { ByteBuffer(bytes: $0.value) })
        bindings.append(pushes.map { $0.traceparent ?? "" })
        bindings.append(pushes.map { $0.origin?.actor.keyID?.uuidString ?? "" })
        bindings.append(pushes.map { $0.origin.map { AuditRepository.actorName($0.actor) } ?? "" })
        bindings.append(pushes.map { $0.origin?.requestID ?? "" })
        bindings.append(pushes.map { $0.origin?.sourceAddress ?? "" })
        bindings.append(pushes.map { ByteBuffer(bytes: $0.template ?? []) })
        bindings.append(pushes.map(\.priorityClass.rawValue))
        bindings.append(pushes.map { $0.timing?.json ?? "" })
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> (UUID, Date) {
        try row.decode((UUID, Date).self)
    }
}
