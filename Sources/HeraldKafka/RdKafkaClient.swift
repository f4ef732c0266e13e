import CRdKafka
import CRdKafkaShim
import Dispatch
import Foundation
import HeraldTiming
import Logging
import Synchronization

/// The only type that holds a librdkafka handle.
///
/// It owns one `rd_kafka_t` (producer or consumer) and a ``CallbackContext`` that librdkafka's
/// callbacks reach through the configuration's opaque pointer. Producer and consumer types call
/// its safe methods; no librdkafka pointer leaves this type (this file and its extensions) except message opaques, which are
/// owned by ``KafkaDeliveryGroup``.
///
/// Threading: librdkafka's handle is thread-safe. Consumer methods are called from the consumer's
/// ``BlockingCallThread`` (polls, commits, close) or under the consumer's state lock (offset
/// stores, pause), so none runs after ``destroy()``.
final class RdKafkaClient: @unchecked Sendable {
    enum Role {
        case producer
        case consumer
    }

    /// State that librdkafka's callbacks need. Lives as long as the client; librdkafka is given
    /// an unretained pointer to it (`rd_kafka_conf_set_opaque`) and the handle is destroyed in
    /// ``destroy()`` before the client, and so the context, can be released.
    final class CallbackContext: Sendable {
        let logger: Logger
        /// `bootstrap.servers`, for error messages.
        let brokers: String
        /// Incremented each time the group takes this member's partitions away.
        let revocations = Atomic<Int>(0)
        /// Partitions currently assigned, for diagnostics and tests.
        let assignment = Mutex<[KafkaTopicPartition]>([])
        /// The last statistics report (`statistics.interval.ms`), set by its callback.
        let statistics = Mutex<KafkaStatistics?>(nil)
        /// When the consumer thread last returned from a poll.
        let lastPoll = Mutex<ContinuousClock.Instant?>(nil)
        /// Records handed out and not stored yet. A revoke is counted (``revocations``) under
        /// this lock too, so a record is either handed out before the revoke or not at all.
        let handOuts = Mutex(HandOutLedger())
        /// How long a revoke waits for the records of its partitions still being handled, in
        /// milliseconds (``KafkaConsumerConfiguration/revokeGrace``); zero: it does not wait, and
        /// hand-outs are not recorded.
        let revokeGraceMilliseconds = Atomic<Int64>(0)
        /// Set when the consumer starts closing: a revoke stops waiting (whatever is still being
        /// handled was stopped, and comes again to the next owner).
        let closing = Atomic<Bool>(false)
        /// The last 16 revokes' records in hand when each began and still unstored when it
        /// committed (for tests and diagnostics).
        let revokes = Mutex<[RevokeWait]>([])

        init(logger: Logger, brokers: String) {
            self.logger = logger
            self.brokers = brokers
        }
    }

    let role: Role
    let context: CallbackContext
    /// Internal only so this type's extensions (`RdKafkaClient+Administration.swift`) can use it.
    let handle: OpaquePointer
    /// Set by ``destroy()``. Calls made from any thread (produce, offset store, pause) hold this
    /// lock so they never run on a destroyed handle; blocking calls run on the client's own
    /// thread, which is also the one that destroys it.
    let destroyedLock = Mutex(false)
    private var destroyed: Bool { destroyedLock.withLock { $0 } }
    /// One-entry cache for topic names of consumed records (used on the consumer thread only).
    private var lastTopicHandle: OpaquePointer?
    private var lastTopicName = ""

    private init(role: Role, handle: OpaquePointer, context: CallbackContext) {
        self.role = role
        self.handle = handle
        self.context = context
    }

    deinit {
        // Dropped without an orderly shutdown: let librdkafka close a consumer itself, and don't
        // block whichever thread released the last reference.
        destroy(timeoutSeconds: 0, consumerClosed: false)
    }

    // MARK: Creation

    /// Creates a producer or consumer handle from librdkafka properties.
    /// - Throws: ``KafkaError`` `.configuration` naming the property librdkafka refused.
    static func make(role: Role, properties: [String: String], logger: Logger) throws -> RdKafkaClient {
        let configuration = rd_kafka_conf_new()!
        let errorCapacity = 512
        let errorText = UnsafeMutablePointer<CChar>.allocate(capacity: errorCapacity)
        defer { errorText.deallocate() }

        for (key, value) in properties.sorted(by: { $0.key < $1.key }) {
            if rd_kafka_conf_set(configuration, key, value, errorText, errorCapacity) != RD_KAFKA_CONF_OK {
                let reason = String(cString: errorText)
                rd_kafka_conf_destroy(configuration)
                let shown = KafkaClientConfiguration.isSensitive(key) ? "[redacted]" : value
                throw KafkaError(
                    kind: .configuration,
                    message: "librdkafka refused property \(key)=\(shown): \(reason)")
            }
        }

        let context = CallbackContext(logger: logger, brokers: properties["bootstrap.servers"] ?? "")
        rd_kafka_conf_set_opaque(configuration, Unmanaged.passUnretained(context).toOpaque())
        rd_kafka_conf_set_log_cb(configuration, logCallback)
        rd_kafka_conf_set_error_cb(configuration, errorCallback)
        rd_kafka_conf_set_stats_cb(configuration, statisticsCallback)
        switch role {
        case .producer:
            rd_kafka_conf_set_dr_msg_cb(configuration, deliveryReportCallback)
        case .consumer:
            rd_kafka_conf_set_rebalance_cb(configuration, rebalanceCallback)
        }

        let type = role == .producer ? RD_KAFKA_PRODUCER : RD_KAFKA_CONSUMER
        // On success the handle owns `configuration`; on failure it is still ours.
        guard let handle = rd_kafka_new(type, configuration, errorText, errorCapacity) else {
            let reason = String(cString: errorText)
            rd_kafka_conf_destroy(configuration)
            throw KafkaError(kind: .configuration, message: "could not create Kafka client: \(reason)")
        }

        let client = RdKafkaClient(role: role, handle: handle, context: context)
        if role == .consumer {
            // Route every event of the handle to the consumer queue served by `pollBatch`.
            rd_kafka_poll_set_consumer(handle)
        }
        return client
    }

    /// The value librdkafka holds for `property`, read back from the handle's configuration: what
    /// the client really runs with, defaults included. Nil for a property librdkafka does not
    /// know, or after ``destroy()``.
    func configuredValue(_ property: String) -> String? {
        destroyedLock.withLock { destroyed -> String? in
            guard !destroyed, let configuration = rd_kafka_conf(handle) else { return nil }
            var size = 0
            guard rd_kafka_conf_get(configuration, property, nil, &size) == RD_KAFKA_CONF_OK, size > 0 else {
                return nil
            }
            var buffer = [CChar](repeating: 0, count: size)
            guard rd_kafka_conf_get(configuration, property, &buffer, &size) == RD_KAFKA_CONF_OK else { return nil }
            return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }

    /// librdkafka's fatal error, if one happened: the client cannot go on and must be recreated
    /// (an idempotent producer that lost its sequence, for example).
    func fatalError() -> String? {
        destroyedLock.withLock { destroyed -> String? in
            guard !destroyed else { return nil }
            var text = [CChar](repeating: 0, count: 512)
            let code = rd_kafka_fatal_error(handle, &text, text.count)
            guard code != RD_KAFKA_RESP_ERR_NO_ERROR else { return nil }
            return
                "\(String(cString: rd_kafka_err2name(code))): \(String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))"
        }
    }

    /// How this client is doing: its last statistics, fatal error, last poll and assignment.
    var health: KafkaClientHealth {
        KafkaClientHealth(
            statistics: context.statistics.withLock { $0 }, fatalError: fatalError(),
            lastPoll: context.lastPoll.withLock { $0 }, assignment: context.assignment.withLock { $0 })
    }

    /// Destroys the handle. Idempotent; after it every other method is a no-op or throws.
    ///
    /// Blocking: call it on the client's own thread, never on Swift's cooperative pool.
    /// librdkafka's destroy waits for its threads; against the development broker it has been
    /// seen to wait forever after a commit the broker refused during a rebalance. So it runs on
    /// a thread of its own and this call waits at most `timeoutSeconds`; past that the handle
    /// (and the callback context it uses) is left to the process exit, with a warning.
    func destroy(timeoutSeconds: Double = 10, consumerClosed: Bool = true) {
        let alreadyDestroyed = destroyedLock.withLock { destroyed in
            defer { destroyed = true }
            return destroyed
        }
        guard !alreadyDestroyed else { return }
        Self.destroyHandle(
            handle, closeConsumer: role == .consumer && !consumerClosed,
            context: context, timeoutSeconds: timeoutSeconds)
    }

    private static func destroyHandle(
        _ handle: OpaquePointer, closeConsumer: Bool,
        context: CallbackContext, timeoutSeconds: Double
    ) {
        /// The pointers move to the destroying thread, and nobody else uses them after this.
        struct Doomed: @unchecked Sendable {
            let handle: OpaquePointer
        }
        let doomed = Doomed(handle: handle)
        let done = DispatchSemaphore(value: 0)
        // The thread keeps `context` alive for as long as librdkafka may call back into it.
        let thread = Thread { [context] in
            // A consumer closed by `closeConsumer()` is not closed a second time.
            let flags = closeConsumer ? 0 : Int32(RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE)
            rd_kafka_destroy_flags(doomed.handle, flags)
            withExtendedLifetime(context) { done.signal() }
        }
        thread.name = "herald-kafka-destroy"
        thread.start()
        if timeoutSeconds > 0, done.wait(timeout: .now() + timeoutSeconds) == .timedOut {
            context.logger.warning(
                "librdkafka did not release a Kafka client within \(Int(timeoutSeconds)) s; it is left to the process exit"
            )
        }
    }

    // MARK: Producer

    /// Enqueues one record. `opaque` comes back in its delivery report.
    /// - Returns: `nil` when enqueued; else the error, and the caller still owns `opaque`.
    func produce(
        topic: String, partition: Int32?, key: [UInt8]?, value: [UInt8], headers: [KafkaHeader],
        opaque: UnsafeMutableRawPointer
    ) -> KafkaError? {
        destroyedLock.withLock { destroyed in
            if destroyed { return KafkaError.shutDown }
            return enqueue(topic: topic, partition: partition, key: key, value: value, headers: headers, opaque: opaque)
        }
    }

    private func enqueue(
        topic: String, partition: Int32?, key: [UInt8]?, value: [UInt8], headers: [KafkaHeader],
        opaque: UnsafeMutableRawPointer
    ) -> KafkaError? {
        // Every header name (NUL-terminated) and value in one buffer, so one borrow of it gives
        // librdkafka all their pointers; librdkafka copies them before herald_kafka_produce returns.
        var packed: [UInt8] = []
        var offsets: [(name: Int, value: Int, length: Int)] = []
        for header in headers {
            let name = packed.count
            packed += Array(header.name.utf8) + [0]
            offsets.append((name, packed.count, header.value.count))
            packed += header.value
        }
        let error: OpaquePointer? = packed.withUnsafeBytes { headerBytes in
            let base = headerBytes.baseAddress
            var namePointers: [UnsafePointer<CChar>?] = []
            var valuePointers: [UnsafeRawPointer?] = []
            var lengths: [Int] = []
            if let base {
                for offset in offsets {
                    namePointers.append((base + offset.name).assumingMemoryBound(to: CChar.self))
                    valuePointers.append(base + offset.value)
                    lengths.append(offset.length)
                }
            }
            return value.withUnsafeBytes { valueBytes in
                let produceWithKey = { (keyPointer: UnsafeRawPointer?, keyLength: Int) -> OpaquePointer? in
                    herald_kafka_produce(
                        self.handle, topic, partition ?? RD_KAFKA_PARTITION_UA,
                        keyPointer, keyLength, valueBytes.baseAddress, valueBytes.count,
                        namePointers, valuePointers, lengths, namePointers.count, opaque)
                }
                if let key {
                    return key.withUnsafeBytes { produceWithKey($0.baseAddress, $0.count) }
                }
                return produceWithKey(nil, 0)
            }
        }
        guard let error else { return nil }
        return KafkaError(consuming: error, context: "could not enqueue a record for \(topic)")
    }

    /// Asks the brokers for `topic`'s partitions and leaders now, so the first record produced
    /// to it does not wait for librdkafka to discover them. Blocking, up to `timeoutMilliseconds`.
    /// - Returns: nil, or why the brokers did not answer.
    func fetchMetadata(topic: String, timeoutMilliseconds: Int32) -> KafkaError? {
        destroyedLock.withLock { destroyed in
            if destroyed { return KafkaError.shutDown }
            // Ours until rd_kafka_topic_destroy below; librdkafka keeps what it learned in its cache.
            guard let topicHandle = rd_kafka_topic_new(handle, topic, nil) else {
                return KafkaError(kind: .configuration, message: "librdkafka refused the topic name \(topic)")
            }
            defer { rd_kafka_topic_destroy(topicHandle) }
            // Filled by librdkafka on success; freed with rd_kafka_metadata_destroy.
            var metadata: UnsafePointer<rd_kafka_metadata>?
            let code = rd_kafka_metadata(handle, 0, topicHandle, &metadata, Int32(timeoutMilliseconds))
            if let metadata { rd_kafka_metadata_destroy(metadata) }
            guard code == RD_KAFKA_RESP_ERR_NO_ERROR else {
                return KafkaError(code: code, context: "no metadata for \(topic)")
            }
            return nil
        }
    }

    /// Serves delivery reports and other callbacks for up to `timeoutMilliseconds`. Blocking.
    func poll(timeoutMilliseconds: Int32) {
        rd_kafka_poll(handle, timeoutMilliseconds)
    }

    /// Waits until every enqueued record is acknowledged, or the timeout. Blocking.
    /// - Returns: the number of records still not acknowledged.
    func flush(timeoutMilliseconds: Int32) -> Int {
        _ = rd_kafka_flush(handle, timeoutMilliseconds)
        return Int(rd_kafka_outq_len(handle))
    }

    /// Fails every record not yet acknowledged (their reports say `_PURGE_QUEUE`/`_PURGE_INFLIGHT`).
    func purgeUnacknowledged() {
        _ = rd_kafka_purge(handle, Int32(RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT))
        rd_kafka_poll(handle, 0)
    }

    // MARK: Development cluster

    /// Starts librdkafka's mock cluster, bookkept by this handle, which must outlive it.
    func makeMockCluster(brokers: Int) -> OpaquePointer? {
        rd_kafka_mock_cluster_new(handle, Int32(brokers))
    }

    // MARK: Consumer

    func subscribe(topics: [String]) throws {
        let list = rd_kafka_topic_partition_list_new(Int32(topics.count))!
        defer { rd_kafka_topic_partition_list_destroy(list) }
        for topic in topics {
            rd_kafka_topic_partition_list_add(list, topic, RD_KAFKA_PARTITION_UA)
        }
        let code = rd_kafka_subscribe(handle, list)
        if code != RD_KAFKA_RESP_ERR_NO_ERROR {
            throw KafkaError(code: code, context: "could not subscribe to \(topics.joined(separator: ", "))")
        }
    }

    /// Takes up to `maximum` records from librdkafka's fetch queue, waiting up to the timeout for
    /// the first. Serves rebalance callbacks. Blocking; call on the consumer thread only.
    ///
    /// Uses `rd_kafka_consumer_poll`, one record at a time: librdkafka 2.0.2's
    /// `rd_kafka_consume_batch_queue` was seen to drop the first record fetched from a
    /// committed offset (a group member resuming a dead member's partition lost one record).
    /// - Throws: a fatal ``KafkaError`` the consumer cannot recover from.
    func pollBatch(maximum: Int, timeoutMilliseconds: Int32) throws -> [KafkaConsumerMessage] {
        guard !destroyed else { throw KafkaError.shutDown }
        defer { context.lastPoll.withLock { $0 = .now } }
        var messages: [KafkaConsumerMessage] = []
        var timeout = timeoutMilliseconds
        while messages.count < maximum, let message = rd_kafka_consumer_poll(handle, timeout) {
            timeout = 0
            defer { rd_kafka_message_destroy(message) }
            let record = message.pointee
            if record.err != RD_KAFKA_RESP_ERR_NO_ERROR {
                if record.err == RD_KAFKA_RESP_ERR__PARTITION_EOF { continue }
                let error = KafkaError(code: record.err, context: "consumer")
                if record.err == RD_KAFKA_RESP_ERR__FATAL { throw error }
                context.logger.warning("Kafka consumer error", metadata: ["error": "\(error)"])
                continue
            }
            let value: [UInt8]
            if let payload = record.payload, record.len > 0 {
                value = Array(UnsafeRawBufferPointer(start: payload, count: record.len))
            } else {
                value = []
            }
            var key: [UInt8]?
            if let keyPointer = record.key {
                key = Array(UnsafeRawBufferPointer(start: keyPointer, count: record.key_len))
            }
            var headers: [KafkaHeader] = []
            for index in 0..<herald_kafka_header_count(message) {
                // Both owned by `message`, copied here before it is destroyed.
                var name: UnsafePointer<CChar>?
                var headerValue: UnsafeRawPointer?
                var length = 0
                guard herald_kafka_header_at(message, index, &name, &headerValue, &length) == 1, let name else {
                    continue
                }
                headers.append(
                    KafkaHeader(
                        name: String(cString: name),
                        value: headerValue.map { Array(UnsafeRawBufferPointer(start: $0, count: length)) } ?? []))
            }
            messages.append(
                KafkaConsumerMessage(
                    topic: topicName(record.rkt),
                    partition: record.partition,
                    offset: record.offset,
                    key: key,
                    value: value,
                    headers: headers
                ))
        }
        return messages
    }

    private func topicName(_ topicHandle: OpaquePointer?) -> String {
        guard let topicHandle else { return "" }
        if topicHandle != lastTopicHandle {
            lastTopicHandle = topicHandle
            lastTopicName = String(cString: rd_kafka_topic_name(topicHandle))
        }
        return lastTopicName
    }

    /// Marks `offset` as the next record to read on a partition; committed in the background.
    func storeOffset(topic: String, partition: Int32, nextOffset: Int64) throws {
        try destroyedLock.withLock { destroyed in
            if destroyed { throw KafkaError.shutDown }
            try store(topic: topic, partition: partition, nextOffset: nextOffset)
        }
    }

    private func store(topic: String, partition: Int32, nextOffset: Int64) throws {
        let list = rd_kafka_topic_partition_list_new(1)!
        defer { rd_kafka_topic_partition_list_destroy(list) }
        let entry = rd_kafka_topic_partition_list_add(list, topic, partition)!
        entry.pointee.offset = nextOffset
        let code = rd_kafka_offsets_store(handle, list)
        if code != RD_KAFKA_RESP_ERR_NO_ERROR {
            throw KafkaError(code: code, context: "could not store offset \(nextOffset) of \(topic)/\(partition)")
        }
        if entry.pointee.err != RD_KAFKA_RESP_ERR_NO_ERROR {
            throw KafkaError(
                code: entry.pointee.err,
                context:
                    "could not store offset \(nextOffset) of \(topic)/\(partition) (not assigned to this member any more?)"
            )
        }
        context.stored(KafkaTopicPartition(topic: topic, partition: partition), nextOffset: nextOffset)
    }

    /// Commits stored offsets now and waits for the broker. Blocking.
    func commitStoredOffsets() throws {
        guard !destroyed else { throw KafkaError.shutDown }
        let code = rd_kafka_commit(handle, nil, 0)
        if code != RD_KAFKA_RESP_ERR_NO_ERROR && code != RD_KAFKA_RESP_ERR__NO_OFFSET {
            throw KafkaError(code: code, context: "could not commit offsets")
        }
    }

    /// Stops (`pause == true`) or restarts fetching from partitions.
    func setPaused(_ pause: Bool, partitions: [KafkaTopicPartition]) throws {
        try destroyedLock.withLock { destroyed in
            if destroyed { throw KafkaError.shutDown }
            try changePause(pause, partitions: partitions)
        }
    }

    private func changePause(_ pause: Bool, partitions: [KafkaTopicPartition]) throws {
        let list = rd_kafka_topic_partition_list_new(Int32(partitions.count))!
        defer { rd_kafka_topic_partition_list_destroy(list) }
        for partition in partitions {
            rd_kafka_topic_partition_list_add(list, partition.topic, partition.partition)
        }
        let code = pause ? rd_kafka_pause_partitions(handle, list) : rd_kafka_resume_partitions(handle, list)
        if code != RD_KAFKA_RESP_ERR_NO_ERROR {
            throw KafkaError(code: code, context: pause ? "could not pause partitions" : "could not resume partitions")
        }
    }

    /// The high watermark (the offset the next record will get) librdkafka last learned for each
    /// partition from fetch responses; no broker round trip. Partitions not fetched yet are left out.
    func highWatermarks(_ partitions: [KafkaTopicPartition]) -> [KafkaTopicPartition: Int64] {
        destroyedLock.withLock { destroyed in
            guard !destroyed else { return [:] }
            var marks: [KafkaTopicPartition: Int64] = [:]
            for partition in partitions {
                var low: Int64 = 0
                var high: Int64 = 0
                let code = rd_kafka_get_watermark_offsets(handle, partition.topic, partition.partition, &low, &high)
                if code == RD_KAFKA_RESP_ERR_NO_ERROR, high >= 0 { marks[partition] = high }
            }
            return marks
        }
    }

    /// How long ``closeConsumer()`` serves the consumer's queue before closing, at least.
    static let closeDrain = Duration.milliseconds(250)
    /// How long at most, should something stay assigned.
    static let closeDrainLimit = Duration.seconds(10)

    /// Commits, leaves the group (LeaveGroup) and stops fetching. Blocking.
    ///
    /// Unsubscribes first and serves the revoke here, polling (records fetched meanwhile are not
    /// handed out and their offsets not stored, so the next owner reads them), until nothing is
    /// assigned — at least ``closeDrain`` and at most ``closeDrainLimit`` — and only then closes.
    /// librdkafka 2.0's `rd_kafka_consumer_close` can hang forever when it serves a rebalance
    /// itself and the callback's `rd_kafka_assign` never gets its answer (librdkafka issues
    /// #4884 and #4527; seen once in `make test`, a center test's consumer closed while its first
    /// assignment was on the way). The minimum lets an assignment already on its way arrive and be
    /// revoked here rather than inside the close.
    func closeConsumer() throws {
        guard !destroyed else { return }
        context.closing.store(true, ordering: .sequentiallyConsistent)
        _ = rd_kafka_unsubscribe(handle)
        let clock = ContinuousClock()
        let started = clock.now
        while clock.now - started < Self.closeDrainLimit {
            if let message = rd_kafka_consumer_poll(handle, 50) { rd_kafka_message_destroy(message) }
            if clock.now - started >= Self.closeDrain, context.assignment.withLock({ $0.isEmpty }) { break }
        }
        let code = rd_kafka_consumer_close(handle)
        if code != RD_KAFKA_RESP_ERR_NO_ERROR {
            throw KafkaError(code: code, context: "could not close the consumer cleanly")
        }
    }
}

/// A topic and one of its partitions.
public struct KafkaTopicPartition: Sendable, Hashable, CustomStringConvertible {
    public var topic: String
    public var partition: Int32

    public init(topic: String, partition: Int32) {
        self.topic = topic
        self.partition = partition
    }

    public var description: String { "\(topic)/\(partition)" }
}

// MARK: - C callbacks

/// The context of the handle a callback was called for. Valid for the duration of the callback:
/// librdkafka calls back only while the handle exists, and the client (which retains the context)
/// destroys the handle before it goes away.
private func callbackContext(_ opaque: UnsafeMutableRawPointer?) -> RdKafkaClient.CallbackContext? {
    guard let opaque else { return nil }
    return Unmanaged<RdKafkaClient.CallbackContext>.fromOpaque(opaque).takeUnretainedValue()
}

private let logCallback: @convention(c) (OpaquePointer?, Int32, UnsafePointer<CChar>?, UnsafePointer<CChar>?) -> Void =
    {
        handle, level, facility, text in
        guard let handle, let context = callbackContext(rd_kafka_opaque(handle)) else { return }
        let message = text.map { String(cString: $0) } ?? ""
        let facilityName = facility.map { String(cString: $0) } ?? ""
        let logLevel: Logger.Level
        switch level {
        case 0...3: logLevel = .error
        case 4: logLevel = .warning
        case 5, 6: logLevel = .info
        default: logLevel = .debug
        }
        context.logger.log(level: logLevel, "\(message)", metadata: ["librdkafka": "\(facilityName)"])
    }

private let errorCallback:
    @convention(c) (OpaquePointer?, Int32, UnsafePointer<CChar>?, UnsafeMutableRawPointer?) -> Void = {
        _, code, reason, opaque in
        guard let context = callbackContext(opaque) else { return }
        let error = rd_kafka_resp_err_t(rawValue: code)
        let text = reason.map { String(cString: $0) } ?? ""
        // Transport errors are routine (a broker restarting); librdkafka retries them itself.
        let level: Logger.Level = KafkaError.isRetriable(error) ? .info : .error
        context.logger.log(
            level: level, "Kafka client: \(text)",
            metadata: ["code": "\(String(cString: rd_kafka_err2name(error)))"])
    }

private let deliveryReportCallback:
    @convention(c) (OpaquePointer?, UnsafePointer<rd_kafka_message_t>?, UnsafeMutableRawPointer?) -> Void = {
        _, message, contextOpaque in
        guard let message, let opaque = message.pointee._private else { return }
        // Balances the retain taken in `KafkaProducer.enqueue` for this record.
        let group = Unmanaged<KafkaDeliveryGroup>.fromOpaque(opaque).takeRetainedValue()
        let record = message.pointee
        if record.err == RD_KAFKA_RESP_ERR_NO_ERROR {
            group.delivered(KafkaDeliveryReport(partition: record.partition, offset: record.offset))
        } else {
            let brokers = callbackContext(contextOpaque)?.brokers ?? "the brokers"
            let hint =
                record.err == RD_KAFKA_RESP_ERR__MSG_TIMED_OUT
                ? " (are the brokers at \(brokers) reachable? Check HERALD_KAFKA_BROKERS)" : ""
            group.failed(KafkaError(code: record.err, context: "a record was not acknowledged by \(brokers)\(hint)"))
        }
    }

/// Keeps librdkafka's statistics report (parsed) for probes and metrics. Runs on whichever
/// thread serves the client's queue; librdkafka frees the JSON when this returns 0.
private let statisticsCallback:
    @convention(c) (OpaquePointer?, UnsafeMutablePointer<CChar>?, Int, UnsafeMutableRawPointer?) -> Int32 = {
        _, json, length, opaque in
        guard let json, let context = callbackContext(opaque) else { return 0 }
        if let statistics = KafkaStatistics(json: UnsafeRawBufferPointer(start: json, count: length)) {
            context.statistics.withLock { $0 = statistics }
        }
        return 0
    }

/// What one revoke found: the records of its partitions in hand when it began, and those still
/// unstored when it committed (they come again to the next owner).
struct RevokeWait: Sendable, Equatable {
    var inHand: Int64
    var leftUnstored: Int64
}

extension RdKafkaClient.CallbackContext {
    /// Hands `messages` out unless a revoke came since they were fetched (`revocationsBefore`):
    /// their partitions were taken away, and they come again to the next owner.
    /// - Returns: whether they may be handed out.
    func handOut(_ messages: some Collection<KafkaConsumerMessage>, fetchedAfter revocationsBefore: Int) -> Bool {
        let recording = revokeGraceMilliseconds.load(ordering: .relaxed) > 0
        return handOuts.withLock { ledger in
            guard revocations.load(ordering: .sequentiallyConsistent) == revocationsBefore else { return false }
            if recording {
                for message in messages {
                    ledger.handOut(
                        KafkaTopicPartition(topic: message.topic, partition: message.partition), offset: message.offset)
                }
            }
            return true
        }
    }

    /// Notes a stored offset (only while hand-outs are recorded).
    func stored(_ partition: KafkaTopicPartition, nextOffset: Int64) {
        guard revokeGraceMilliseconds.load(ordering: .relaxed) > 0 else { return }
        handOuts.withLock { $0.store(partition, nextOffset: nextOffset) }
    }

    /// Blocks the consumer thread (inside a revoke) until every record of `partitions` handed out
    /// is stored, the grace is over, or the consumer closes; not at all for a lost assignment.
    /// The group's rebalance waits meanwhile; what is still unstored afterwards comes again to the
    /// next owner.
    func awaitHandled(_ partitions: [KafkaTopicPartition], assignmentLost: Bool) {
        let grace = Duration.milliseconds(revokeGraceMilliseconds.load(ordering: .relaxed))
        guard grace > .zero else { return }
        let clock = ContinuousClock()
        let started = clock.now
        let inHand = handOuts.withLock { $0.unstored(in: partitions) }
        var unstored = inHand
        while unstored > 0, !assignmentLost, !closing.load(ordering: .sequentiallyConsistent),
            clock.now - started < grace
        {
            Thread.sleep(forTimeInterval: 0.002)
            unstored = handOuts.withLock { $0.unstored(in: partitions) }
        }
        revokes.withLock { revokes in
            revokes.append(RevokeWait(inHand: inHand, leftUnstored: unstored))
            if revokes.count > 16 { revokes.removeFirst() }
        }
        guard inHand > 0 else { return }
        let waited = clock.now - started
        if unstored > 0 {
            logger.warning(
                "records still being handled when their partitions were revoked; their next owner handles them again",
                metadata: [
                    "records": "\(unstored)", "waited-ms": "\(waited.wholeMilliseconds)",
                    "grace-ms": "\(grace.wholeMilliseconds)", "assignment-lost": "\(assignmentLost)",
                ])
        } else {
            logger.info(
                "waited for the records in hand before giving their partitions back",
                metadata: ["records": "\(inHand)", "waited-ms": "\(waited.wholeMilliseconds)"])
        }
    }
}

private let rebalanceCallback:
    @convention(c) (
        OpaquePointer?, rd_kafka_resp_err_t, UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?,
        UnsafeMutableRawPointer?
    ) -> Void = {
        handle, code, partitions, opaque in
        guard let handle, let context = callbackContext(opaque) else { return }
        var described: [KafkaTopicPartition] = []
        if let partitions {
            let list = partitions.pointee
            for index in 0..<Int(list.cnt) {
                let element = list.elems[index]
                described.append(
                    KafkaTopicPartition(topic: String(cString: element.topic), partition: element.partition))
            }
        }
        switch code {
        case RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS:
            context.logger.info(
                "Kafka partitions assigned", metadata: ["partitions": "\(described.map(\.description))"])
            // Whatever this member stored of them before is history: counted afresh.
            context.handOuts.withLock { $0.forget(described) }
            _ = rd_kafka_assign(handle, partitions)
            context.assignment.withLock { $0 = described }
        default:
            // A revoke: let the records of these partitions already handed out be handled (for at
            // most the grace), commit what was handled so the next owner starts right after it,
            // then drop the partitions. The consumer drops records it fetched but did not hand
            // out yet.
            context.handOuts.withLock { _ in context.revocations.add(1, ordering: .sequentiallyConsistent) }
            // A lost assignment (session timed out, member fenced) belongs to others already.
            context.awaitHandled(described, assignmentLost: rd_kafka_assignment_lost(handle) != 0)
            let commit = rd_kafka_commit(handle, nil, 0)
            if commit != RD_KAFKA_RESP_ERR_NO_ERROR && commit != RD_KAFKA_RESP_ERR__NO_OFFSET {
                context.logger.warning(
                    "Kafka commit on revoke failed",
                    metadata: ["code": "\(String(cString: rd_kafka_err2name(commit)))"])
            }
            context.logger.info("Kafka partitions revoked", metadata: ["partitions": "\(described.map(\.description))"])
            _ = rd_kafka_assign(handle, nil)
            context.handOuts.withLock { $0.forget(described) }
            context.assignment.withLock { $0 = [] }
        }
        // Return from the batch poll now, so one batch never mixes records of two assignments.
        rd_kafka_yield(handle)
    }
