#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Herald_V1_PushEvent {
    /// An event about push `pushID` of app `appID`, happening now.
    public init(kind: Kind, pushID: UUID, appID: UUID, occurredAt: Date = Date()) {
        self.init()
        self.schemaVersion = Self.currentSchemaVersion
        self.kind = kind
        self.pushID = pushID.recordBytes
        self.appID = appID.recordBytes
        self.occurredAtMs = Int64(occurredAt.timeIntervalSince1970 * 1000)
    }
}
