import Foundation
import HeraldAPNsVocabulary

/// What the whole system looks like, as one center reports it (`SystemGaugeRepository.systemGauges(center:lease:)` in HeraldStore).
public struct SystemGauges: Sendable, Equatable {
    /// Unfinished pushes per state (finished ones are not counted: the table only grows).
    public var pushesByState: [String: Int64]
    /// Seconds since the oldest push still accepted, fanning out or sending was accepted; 0 without one.
    public var oldestUnfinishedPushAge: Double
    /// Outbox records not yet published to Kafka.
    public var outboxBacklog: Int64
    /// Seconds since the oldest unpublished outbox record was written; 0 without one.
    public var oldestOutboxRecordAge: Double
    /// Connections of Herald's processes to the database, by process and state (`active`, `idle`,
    /// `idle in transaction`, …), as `pg_stat_activity` shows them.
    public var connections: [Connections: Int64] = [:]
    /// Client connections to the whole PostgreSQL server (every database and program, Herald's or
    /// not), and the server's `max_connections`: how close it is to refusing new ones.
    public var serverConnections: Int64 = 0
    public var maximumConnections: Int64 = 0
    /// Apps whose client keys still follow the rules from before the trust migration
    /// (``AppRepository/legacyModeApps(limit:)``).
    public var appsInLegacyMode: Int64 = 0
    /// When each stored APNs certificate (.p12/PEM credential) expires, seconds since the epoch.
    public var certificateExpiries: [CertificateExpiry] = []

    public init(
        pushesByState: [String: Int64], oldestUnfinishedPushAge: Double, outboxBacklog: Int64,
        oldestOutboxRecordAge: Double, connections: [Connections: Int64] = [:], serverConnections: Int64 = 0,
        maximumConnections: Int64 = 0, appsInLegacyMode: Int64 = 0, certificateExpiries: [CertificateExpiry] = []
    ) {
        self.pushesByState = pushesByState
        self.oldestUnfinishedPushAge = oldestUnfinishedPushAge
        self.outboxBacklog = outboxBacklog
        self.oldestOutboxRecordAge = oldestOutboxRecordAge
        self.connections = connections
        self.serverConnections = serverConnections
        self.maximumConnections = maximumConnections
        self.appsInLegacyMode = appsInLegacyMode
        self.certificateExpiries = certificateExpiries
    }

    public struct CertificateExpiry: Sendable, Equatable {
        public var appID: UUID
        public var environment: String
        public var expiresAt: Double

        public init(appID: UUID, environment: String, expiresAt: Double) {
            self.appID = appID
            self.environment = environment
            self.expiresAt = expiresAt
        }
    }

    public struct Connections: Sendable, Hashable {
        public var application: String
        public var state: String

        public init(application: String, state: String) {
            self.application = application
            self.state = state
        }
    }

    /// The `application_name`s Herald's processes connect with (a bounded label set).
    public static let applications = [
        "herald-api", "herald-center", "herald-sender", "herald-center-audience", "herald",
    ]
}
