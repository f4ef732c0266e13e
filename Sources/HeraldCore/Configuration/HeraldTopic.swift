/// The Kafka topics Herald's processes talk through, and their partition counts in development.
public enum HeraldTopic: String, CaseIterable, Sendable {
    /// Push events (created, canceled, recalled, schedule due); key: push id.
    case pushes = "herald.pushes"
    /// Job batches of up to ~500 notifications; key: batch id.
    case jobs = "herald.jobs"
    /// Job batches of transactional pushes (a login code, an order update); senders read them
    /// with their own consumer and their own share of batches in flight, so a campaign's backlog
    /// in `herald.jobs` never delays them. Key: batch id.
    case transactionalJobs = "herald.jobs.transactional"
    /// Outcome batches; key: push id.
    case outcomes = "herald.outcomes"
    /// Records a consumer could not handle; key: the original key.
    case deadLetter = "herald.deadletter"

    /// The topic's name on the broker.
    public var name: String { rawValue }

    /// Partitions the development broker creates unless configured otherwise. Jobs get the most:
    /// they are what sender workers share, and a group has at most one member per partition.
    public var defaultPartitions: Int {
        switch self {
        case .pushes: 4
        case .jobs: 16
        case .transactionalJobs: 16
        case .outcomes: 8
        case .deadLetter: 1
        }
    }
}
