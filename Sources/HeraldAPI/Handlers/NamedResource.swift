import HeraldAPIContract

/// The named resources an app keeps — segments, templates, schedules, webhook endpoints: each
/// name unique in the app, a limit of how many — with the error codes of a taken name and of the
/// limit.
enum NamedResource: String {
    case segment, template, schedule
    case webhook = "webhook endpoint"

    /// How the limit's message names several of them.
    var plural: String { rawValue + "s" }

    var nameTaken: APIErrorCode {
        switch self {
        case .segment: .segmentNameTaken
        case .template: .templateNameTaken
        case .schedule: .scheduleNameTaken
        case .webhook: .webhookNameTaken
        }
    }

    var limitReached: APIErrorCode {
        switch self {
        case .segment: .segmentLimit
        case .template: .templateLimit
        case .schedule: .scheduleLimit
        case .webhook: .webhookLimit
        }
    }
}
