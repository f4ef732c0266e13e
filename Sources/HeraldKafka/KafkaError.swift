import CRdKafka

/// An error reported by librdkafka or by Herald's Kafka wrapper.
///
/// Errors are taken from the return values of librdkafka's calls (never from
/// `rd_kafka_last_error()`), so they belong to the call that failed. ``isRetriable`` says the
/// same call may succeed later (a broker away, a full queue, a timeout); ``isFatal`` says the
/// client can no longer be used and must be recreated (for example a fenced idempotent producer).
public struct KafkaError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, in Herald's terms.
    public enum Kind: Sendable, Equatable {
        /// librdkafka rejected a configuration property.
        case configuration
        /// librdkafka returned an error code; see ``KafkaError/code``.
        case broker
        /// The client was already shut down when it was used.
        case shutDown
        /// A message exceeded `message.max.bytes`.
        case messageTooLarge
    }

    /// What went wrong.
    public var kind: Kind
    /// librdkafka's `rd_kafka_resp_err_t` value (0 when the error did not come from librdkafka).
    public var code: Int32
    /// librdkafka's symbolic name of the code, for example `_QUEUE_FULL` or `UNKNOWN_TOPIC_OR_PART`.
    public var name: String
    /// A human-readable explanation, including what to check.
    public var message: String
    /// The same call may succeed if repeated later.
    public var isRetriable: Bool
    /// The client must be recreated.
    public var isFatal: Bool

    public var description: String {
        "Kafka error \(name) (\(code)): \(message)"
    }

    init(
        kind: Kind, code: Int32 = 0, name: String = "", message: String,
        isRetriable: Bool = false, isFatal: Bool = false
    ) {
        self.kind = kind
        self.code = code
        self.name = name.isEmpty ? "\(kind)" : name
        self.message = message
        self.isRetriable = isRetriable
        self.isFatal = isFatal
    }

    /// An error for a bare response code.
    init(code: rd_kafka_resp_err_t, context: String) {
        let name = String(cString: rd_kafka_err2name(code))
        let text = String(cString: rd_kafka_err2str(code))
        self.init(
            kind: code == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE ? .messageTooLarge : .broker,
            code: code.rawValue,
            name: name,
            message: "\(context): \(text)",
            isRetriable: KafkaError.isRetriable(code),
            isFatal: code == RD_KAFKA_RESP_ERR__FATAL
        )
    }

    /// An error for an `rd_kafka_error_t`, which the initializer destroys.
    init(consuming error: OpaquePointer, context: String) {
        let code = rd_kafka_error_code(error)
        self.init(
            kind: code == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE ? .messageTooLarge : .broker,
            code: code.rawValue,
            name: String(cString: rd_kafka_error_name(error)),
            message: "\(context): \(String(cString: rd_kafka_error_string(error)))",
            isRetriable: rd_kafka_error_is_retriable(error) != 0 || KafkaError.isRetriable(code),
            isFatal: rd_kafka_error_is_fatal(error) != 0
        )
        rd_kafka_error_destroy(error)
    }

    static let shutDown = KafkaError(
        kind: .shutDown,
        message: "the Kafka client was already shut down; create a new one"
    )

    /// Codes that describe a passing condition rather than a broken request.
    static func isRetriable(_ code: rd_kafka_resp_err_t) -> Bool {
        switch code {
        case RD_KAFKA_RESP_ERR__QUEUE_FULL, RD_KAFKA_RESP_ERR__TIMED_OUT,
            RD_KAFKA_RESP_ERR__MSG_TIMED_OUT, RD_KAFKA_RESP_ERR__TRANSPORT,
            RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN, RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT,
            RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION, RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE,
            RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS, RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND,
            RD_KAFKA_RESP_ERR_NETWORK_EXCEPTION, RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS,
            RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE, RD_KAFKA_RESP_ERR_NOT_COORDINATOR,
            RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS:
            return true
        default:
            return false
        }
    }
}
