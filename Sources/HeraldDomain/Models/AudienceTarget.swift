import Foundation
import HeraldAPNsVocabulary

/// One device of an audience page: what the fan-out puts in a job.
public struct AudienceTarget: Sendable, Equatable {
    public var deviceID: Int64
    public var token: [UInt8]
    public var environment: APNsEnvironment
    public var topic: String

    public init(deviceID: Int64, token: [UInt8], environment: APNsEnvironment, topic: String) {
        self.deviceID = deviceID
        self.token = token
        self.environment = environment
        self.topic = topic
    }
}
