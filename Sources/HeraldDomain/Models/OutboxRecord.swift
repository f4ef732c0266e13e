import Foundation
import HeraldAPNsVocabulary

/// A Kafka record waiting in the outbox.
public struct OutboxRecord: Sendable, Equatable {
    public var id: Int64
    public var topic: String
    public var key: [UInt8]?
    public var value: [UInt8]
    /// Published as the record's `traceparent` header.
    public var traceparent: String?

    public init(id: Int64, topic: String, key: [UInt8]? = nil, value: [UInt8], traceparent: String? = nil) {
        self.id = id
        self.topic = topic
        self.key = key
        self.value = value
        self.traceparent = traceparent
    }
}
