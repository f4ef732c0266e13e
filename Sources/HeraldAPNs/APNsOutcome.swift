import HeraldAPNsVocabulary
import HeraldHTTP2

/// What became of one send.
public enum APNsOutcome: Sendable, Hashable {
    /// APNs took it (200). Its `apns-id` is the one it was sent with (Herald gives every
    /// notification one); for one sent without, the id APNs made up is not kept.
    case accepted
    /// APNs refused it with a reason. `unregisteredAt` (milliseconds since 1970) comes with 410
    /// Unregistered: the token is invalid unless the device registered again after it.
    case rejected(APNsReason, status: Int, unregisteredAt: Int64?)
    /// It did not get an answer from APNs.
    case failed(APNsTransportFailure)

    /// Whether sending it again later may succeed.
    public var isRetryable: Bool {
        switch self {
        case .accepted: false
        case .rejected(let reason, _, _): reason.disposition != .permanent
        case .failed(let failure): failure != .invalid
        }
    }
}

/// Why a send got no answer from APNs.
public enum APNsTransportFailure: Sendable, Hashable {
    /// The request's deadline passed (the stream was reset).
    case timeout
    /// The connection closed while the request was open (it may or may not have been delivered).
    case connectionLost
    /// The server reset the stream.
    case streamReset(HTTP2ErrorCode)
    /// APNs did not process it (GOAWAY, REFUSED_STREAM) on every try allowed.
    case notProcessed
    /// No connection could be opened before the deadline.
    case noConnection
    /// The client is shutting down.
    case clientStopped
    /// The notification breaks a rule checked before sending (``APNsNotification/problem``).
    case invalid
}
