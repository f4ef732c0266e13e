/// Whether a notification is sent again after an answer: the one rule of both send paths
/// (``APNsClient/send(_:)-(APNsNotification)`` and a batch run).
///
/// APNs' answer may say that sending again can change the outcome: the connection's provider
/// token had expired (it is renewed; sent again once), or APNs never processed the request
/// (GOAWAY, REFUSED_STREAM; sent again up to ``APNsClientConfiguration/unprocessedResends``
/// times). Everything else is final for the client; the sender's retry policy decides the rest.
struct APNsResendRule: Sendable {
    /// Times sent again because APNs did not process it.
    private(set) var unprocessedResends = 0
    /// Whether it was sent again after its connection's token was renewed.
    private(set) var sentWithRenewedToken = false

    /// Whether to send the notification again after an answer asking for `reason`, counting it
    /// if so.
    /// - Parameter limit: the most resends of unprocessed requests.
    mutating func sendsAgain(for reason: APNsClient.Answer.SendAgain?, limit: Int) -> Bool {
        switch reason {
        case .renewedToken? where !sentWithRenewedToken:
            sentWithRenewedToken = true
            return true
        case .unprocessed? where unprocessedResends < limit:
            unprocessedResends += 1
            return true
        default:
            return false
        }
    }
}
