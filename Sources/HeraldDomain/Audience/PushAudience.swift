import Foundation
import HeraldAPNsVocabulary

/// Who a push goes to, as the Open API stores it in `pushes.audience`.
///
/// JSON: `{"all": true}` for every device of the app, or any combination of
/// `"registration_ids"`, `"aliases"`, `"tags": {"any": [...], "all": [...], "none": [...]}` and
/// `"environment"`. Selectors combine with AND; ids and aliases together form one list (a device
/// named by either is in it). Only active devices of the app are ever targeted.
public struct PushAudience: Sendable, Equatable, Codable {
    /// Every device of the app (the other selectors still narrow it).
    public var all: Bool?
    public var registrationIDs: [Int64]?
    public var aliases: [String]?
    public var tags: TagFilter?
    public var environment: APNsEnvironment?
    /// A condition over device attributes (an inline filter, a saved segment's, or both ANDed).
    public var filter: AudienceFilter?
    /// The saved segment the push named, for those who read the push later (its filter is in
    /// `filter`, copied when the push was accepted).
    public var segment: UUID?

    /// A boolean over tags: a device must carry at least one of `any`, every one of `all`, and
    /// none of `none` (absent or empty lists do not filter).
    public struct TagFilter: Sendable, Equatable, Codable {
        public var any: [String]?
        public var all: [String]?
        public var none: [String]?

        public init(any: [String]? = nil, all: [String]? = nil, none: [String]? = nil) {
            self.any = any
            self.all = all
            self.none = none
        }
    }

    enum CodingKeys: String, CodingKey {
        case all
        case registrationIDs = "registration_ids"
        case aliases, tags, environment, filter, segment
    }

    public init(
        all: Bool? = nil, registrationIDs: [Int64]? = nil, aliases: [String]? = nil, tags: TagFilter? = nil,
        environment: APNsEnvironment? = nil, filter: AudienceFilter? = nil, segment: UUID? = nil
    ) {
        self.all = all
        self.registrationIDs = registrationIDs
        self.aliases = aliases
        self.tags = tags
        self.environment = environment
        self.filter = filter
        self.segment = segment
    }

    /// Every active device of the app.
    public static let everyone = PushAudience(all: true)

    /// Reads the stored JSON.
    /// - Throws: `DecodingError` when it is not an audience.
    public init(json: String) throws {
        self = try JSONDecoder().decode(PushAudience.self, from: Data(json.utf8))
    }

    /// The JSON stored with a push.
    public var json: String { storedJSON }
}

extension PushAudience {
    /// The devices of an audience that the kept device counts (counted as devices register,
    /// change and go) hold exactly: everyone, or those carrying one tag, in one environment or both.
    public struct KeptCount: Sendable, Equatable {
        /// The tag, or nil for all the app's devices.
        public var tag: String?
        public var environment: APNsEnvironment?
    }

    /// What the kept counts answer for this audience, or nil when only a query over the devices
    /// can (a list of ids or aliases, a filter or segment, several tags, a tag excluded).
    public var keptCount: KeptCount? {
        guard (registrationIDs ?? []).isEmpty, (aliases ?? []).isEmpty, filter == nil, segment == nil,
            (tags?.none ?? []).isEmpty
        else { return nil }
        // `any` of one tag and `all` of the same tag select the same devices.
        let named = Set((tags?.any ?? []) + (tags?.all ?? []))
        switch named.count {
        case 0: return all == true || environment != nil ? KeptCount(tag: nil, environment: environment) : nil
        case 1: return KeptCount(tag: named.first, environment: environment)
        default: return nil
        }
    }
}

extension Encodable {
    /// The value as Herald stores it in a jsonb column: keys sorted, so equal values are equal text.
    var storedJSON: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? String(decoding: encoder.encode(self), as: UTF8.self)) ?? "{}"
    }
}

/// The devices one query of a fan-out reads: a push's audience for an app, optionally narrowed to
/// a device-id range, one environment and topic (rebuilding one batch), or to the devices that
/// accepted an earlier push (a recall).
public struct AudienceSelection: Sendable, Equatable {
    public var appID: UUID
    public var audience: PushAudience
    /// Only devices that accepted this push (a recall's audience).
    public var acceptedByPush: UUID?
    /// Only device ids up to this one (inclusive).
    public var throughDevice: Int64?
    /// Only devices registered with this topic.
    public var topic: String?
    /// Values read with each device for a templated push (its pages' ``DeviceTokens`` carry them).
    public var personalization: [PersonalizationField] = []
    /// Only devices whose time zone is one of these (`""`: devices without one): a wave of a push
    /// sent in waves (docs/local-time.md).
    public var timeZones: [String]?

    public init(
        appID: UUID, audience: PushAudience, acceptedByPush: UUID? = nil, throughDevice: Int64? = nil,
        topic: String? = nil
    ) {
        self.appID = appID
        self.audience = audience
        self.acceptedByPush = acceptedByPush
        self.throughDevice = throughDevice
        self.topic = topic
    }
}
