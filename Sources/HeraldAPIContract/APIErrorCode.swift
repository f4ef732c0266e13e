/// Every `error.code` the Open API and the console answer with: one definition, read by the
/// server (`APIError`, `ConsoleError`) and listed in `Schemas/openapi.yaml` under the `Error`
/// schema's `code` (a contract test checks the two lists are the same).
///
/// A code is stable: a client may branch on it. Clients must still accept codes this list does
/// not name yet (a newer server can add one), which is why the schema does not make the
/// property an enum.
public enum APIErrorCode: String, CaseIterable, Sendable {
    // The request itself.
    case invalidJSON = "invalid_json"
    case invalidText = "invalid_text"
    case invalidRequest = "invalid_request"
    case invalidValue = "invalid_value"
    case invalid = "invalid"
    case missingField = "missing_field"
    case unknownField = "unknown_field"
    case wrongType = "wrong_type"
    case bodyTooLarge = "body_too_large"
    case payloadTooLarge = "payload_too_large"
    case unsupportedMediaType = "unsupported_media_type"
    case methodNotAllowed = "method_not_allowed"
    case noSuchRoute = "no_such_route"
    case notFound = "not_found"

    // Who calls.
    case missingKey = "missing_key"
    case unknownKey = "unknown_key"
    case tooManyFailedAuthentications = "too_many_failed_authentications"
    case adminOnly = "admin_only"
    case appKeyRequired = "app_key_required"
    case serverKeyRequired = "server_key_required"
    case clientKeyNotAllowed = "client_key_not_allowed"
    case otherApp = "other_app"
    case scopeMissing = "scope_missing"
    case rateLimited = "rate_limited"
    case signedOut = "signed_out"

    // What a client key may do.
    case addressByToken = "address_by_token"
    case tagNotAllowed = "tag_not_allowed"
    case attributeNotAllowed = "attribute_not_allowed"
    case aliasSignatureRequired = "alias_signature_required"
    case aliasSignatureInvalid = "alias_signature_invalid"
    case aliasSignatureExpired = "alias_signature_expired"

    // Limits of an app.
    case deviceQuotaReached = "device_quota_reached"
    case keyLimit = "key_limit"
    case segmentLimit = "segment_limit"
    case templateLimit = "template_limit"
    case scheduleLimit = "schedule_limit"
    case webhookLimit = "webhook_limit"
    case tooManyStreams = "too_many_streams"

    // Conflicts with what exists.
    case conflict = "conflict"
    case idempotencyKeyReused = "idempotency_key_reused"
    case segmentNameTaken = "segment_name_taken"
    case templateNameTaken = "template_name_taken"
    case scheduleNameTaken = "schedule_name_taken"
    case webhookNameTaken = "webhook_name_taken"
    case pushFinished = "push_finished"
    case pushNotRunning = "push_not_running"
    case recallOfRecall = "recall_of_recall"
    /// An A/B test's winner was asked for of a push without winner mode.
    case notWinnerMode = "not_winner_mode"
    /// An A/B test's winner was picked already (by the operator, or by open rate).
    case winnerPicked = "winner_picked"

    // Engagement events (POST /v1/events).
    case eventTooOld = "event_too_old"
    case notSentToDevice = "not_sent_to_device"

    // Device imports.
    case importTooLarge = "import_too_large"
    case importTooSlow = "import_too_slow"
    case importTimedOut = "import_timed_out"
    case importInProgress = "import_in_progress"
    case importsBusy = "imports_busy"

    // The server.
    case noMasterKey = "no_master_key"
    case databaseUnavailable = "database_unavailable"
    case timedOut = "timed_out"
    case internalError = "internal_error"
    case unexpected = "unexpected"
}
