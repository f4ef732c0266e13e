import Foundation
import HeraldAPNsVocabulary

/// The outcome of one job batch, reduced to what the accounting stores.
public struct BatchOutcome: Sendable {
    public var pushID: UUID
    public var sequence: Int
    public var acceptedDeviceIDs: [Int64]
    /// Devices that acknowledged the push over their long connection (never sent through APNs).
    public var deliveredOnlineDeviceIDs: [Int64]
    /// Devices of an online-only push not connected, or not acknowledging in time: never sent,
    /// counted skipped (``SkipReason/offline``).
    public var offlineDeviceIDs: [Int64]
    public var failures: [Failure]

    public struct Failure: Sendable {
        public var deviceID: Int64
        public var status: FailedDelivery.Status
        public var reason: String
        public var httpStatus: Int
        /// APNs' 410 timestamp, when it gave one.
        public var unregisteredAt: Date?
        public var attempts: Int

        /// Whether this failure proves the device's token dead for its topic and environment:
        /// a rejection whose reason ``APNsReason/invalidatesToken`` (the one rule, in HeraldAPNsVocabulary).
        public var invalidatesToken: Bool { status == .rejected && APNsReason(reason).invalidatesToken }

        /// Herald's own reasons for a batch the sender could not send: the app has no credential
        /// for the environment, or the one stored cannot be used (not a valid key or certificate).
        public static let missingCredentialReason = "MissingCredential"
        public static let invalidCredentialReason = "InvalidCredential"
        /// Herald's reason for a device whose personalized notification rendered over APNs'
        /// size limit: never sent (docs/templates.md).
        public static let renderedPayloadTooLargeReason = "RenderedPayloadTooLarge"

        /// Whether the app's credential, not the device, is at fault: APNs refused it (a reason
        /// with the ``APNsReason/Disposition/credential`` disposition), or the sender had none it
        /// could use.
        public var refusesCredential: Bool {
            status == .rejected
                && (APNsReason(reason).disposition == .credential || reason == Self.missingCredentialReason
                    || reason == Self.invalidCredentialReason)
        }

        public init(
            deviceID: Int64, status: FailedDelivery.Status, reason: String, httpStatus: Int,
            unregisteredAt: Date?, attempts: Int
        ) {
            self.deviceID = deviceID
            self.status = status
            self.reason = reason
            self.httpStatus = httpStatus
            self.unregisteredAt = unregisteredAt
            self.attempts = attempts
        }
    }

    public init(
        pushID: UUID, sequence: Int, acceptedDeviceIDs: [Int64], deliveredOnlineDeviceIDs: [Int64] = [],
        offlineDeviceIDs: [Int64] = [], failures: [Failure]
    ) {
        self.pushID = pushID
        self.sequence = sequence
        self.acceptedDeviceIDs = acceptedDeviceIDs
        self.deliveredOnlineDeviceIDs = deliveredOnlineDeviceIDs
        self.offlineDeviceIDs = offlineDeviceIDs
        self.failures = failures
    }
}

/// What one call of the outcome accounting changed.
public struct AppliedOutcomes: Sendable, Equatable {
    /// Batches counted now (a batch's outcome seen before is not counted again).
    public var batchesCounted = 0
    /// Outcomes of batches already counted, or of batches no push recorded.
    public var batchesIgnored = 0
    public var notificationsCounted = 0
    public var tokensInvalidated = 0
    /// Pushes that became completed.
    public var pushesCompleted: [UUID] = []

    public init() {}
}
